package report

import (
	"fmt"
	"io"
	"strings"
	"sync"
)

// Progress returns a progress bar on w, for eval.Config.Progress: it
// redraws one line ("[=====>    ] 12/40 cases") on every call and ends it
// with the last. It is safe for concurrent use.
func Progress(w io.Writer) func(done, total int) {
	const width = 30
	var mu sync.Mutex
	return func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		if total <= 0 {
			return
		}
		filled := width * done / total
		bar := strings.Repeat("=", filled)
		if filled < width {
			bar += ">" + strings.Repeat(" ", width-filled-1)
		}
		fmt.Fprintf(w, "\r[%s] %d/%d cases", bar, done, total)
		if done >= total {
			fmt.Fprintln(w)
		}
	}
}
