package threads_test

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/threads"
)

func TestTitle(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"I was charged twice", "I was charged twice"},
		{"  two\nlines\t here ", "two lines here"},
		{strings.Repeat("a", 61), strings.Repeat("a", 60) + "…"},
		{strings.Repeat("a", 59) + "é and more", strings.Repeat("a", 59) + "…"},
		{strings.Repeat("word ", 20), strings.TrimSpace(strings.Repeat("word ", 12)) + "…"},
	} {
		if got := threads.Title(tt.in); got != tt.want {
			t.Errorf("Title(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
