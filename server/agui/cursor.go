package agui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/batonhq/baton/server"
)

// aguiCursor is the position of an AG-UI event, its SSE id: the baton
// event it comes from (At), how many AG-UI events made of that baton event
// follow it (K: 0 for the last), and, when a text message is open after
// it, that message's number and the bytes of its text sent (N, B). Text
// form: "AT:K" or "AT:K:N:B". K counts from the end because the events a
// baton event makes differ only at their start: a message whose deltas
// were streamed ends it (TEXT_MESSAGE_END), the same message rebuilt from a
// checkpoint (no deltas) opens, fills and ends it.
type aguiCursor struct {
	At   server.Cursor
	K    int
	N, B int
	set  bool // not the zero cursor (before every event)
	text bool // N and B are set
}

func (c aguiCursor) String() string {
	s := c.At.String() + ":" + strconv.Itoa(c.K)
	if c.text {
		s += ":" + strconv.Itoa(c.N) + ":" + strconv.Itoa(c.B)
	}
	return s
}

// parseAGUICursor parses an AG-UI event id; "" is before every event.
func parseAGUICursor(s string) (aguiCursor, error) {
	if s == "" {
		return aguiCursor{}, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) != 2 && len(parts) != 4 {
		return aguiCursor{}, fmt.Errorf("agui: bad event id %q", s)
	}
	at, err := server.ParseCursor(parts[0])
	if err != nil || parts[0] == "" {
		return aguiCursor{}, fmt.Errorf("agui: bad event id %q", s)
	}
	c := aguiCursor{At: at, set: true}
	nums := make([]int, len(parts)-1)
	for i, p := range parts[1:] {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || len(p) > 10 {
			return aguiCursor{}, fmt.Errorf("agui: bad event id %q", s)
		}
		nums[i] = n
	}
	c.K = nums[0]
	if len(nums) == 3 {
		c.N, c.B, c.text = nums[1], nums[2], true
		if c.N < 1 {
			return aguiCursor{}, fmt.Errorf("agui: bad event id %q", s)
		}
	}
	return c, nil
}

// before reports whether c comes before the event at (at, k), k counted
// from the end as K is.
func (c aguiCursor) before(at server.Cursor, k int) bool {
	if !c.set {
		return true
	}
	return c.At.Less(at) || c.At == at && k < c.K
}
