package protocols_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestAdaptersStandAlone checks the layout every adapter relies on: the
// core imports no adapter, and an adapter imports the core and no other
// adapter, so that each can be read, tested and removed on its own.
func TestAdaptersStandAlone(t *testing.T) {
	const mod = "github.com/batonhq/baton/server"
	adapters := []string{mod + "/openai", mod + "/agui", mod + "/a2a", mod + "/mcp"}
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	for _, a := range adapters {
		if slices.Contains(deps(mod), a) {
			t.Errorf("the core imports the adapter %s", a)
		}
		d := deps(a)
		if !slices.Contains(d, mod) {
			t.Errorf("%s does not import the core", a)
		}
		for _, b := range adapters {
			if b != a && slices.Contains(d, b) {
				t.Errorf("%s imports the adapter %s", a, b)
			}
		}
	}
}
