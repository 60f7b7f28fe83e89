package yamlpath_test

import (
	"testing"

	"github.com/batonhq/baton/internal/yamlpath"
)

func TestParent(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]string{
		"$.a[1].b": "$.a[1]",
		"$.a[1]":   "$.a",
		"$.a":      "$",
		"$":        "",
		"x":        "$",
	} {
		if got := yamlpath.Parent(p); got != want {
			t.Errorf("Parent(%q) = %q, want %q", p, got, want)
		}
	}
}
