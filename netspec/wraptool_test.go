package netspec_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/batonhq/baton/netspec"
)

// TestWrapTool: Options.WrapTool wraps each tool once, whichever agents
// share it, and the wrapper is what the agents call.
func TestWrapTool(t *testing.T) {
	t.Parallel()
	const src = `
version: 1
name: n
tools:
  - {name: lookup, result: found}
  - {name: refund, result: refunded}
agents:
  - {name: a, model: scripted, reply: hi, tools: [lookup, refund]}
  - {name: b, model: scripted, reply: hi, tools: [lookup]}
`
	wrapped := map[string]int{}
	spec, err := netspec.Parse([]byte(src), "wrap.yaml", netspec.Options{WrapTool: func(name string, fn netspec.ToolFunc) netspec.ToolFunc {
		wrapped[name]++
		return func(ctx context.Context, args json.RawMessage) (string, error) {
			out, err := fn(ctx, args)
			return "wrapped " + out, err
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if wrapped["lookup"] != 1 || wrapped["refund"] != 1 || len(wrapped) != 2 {
		t.Errorf("wrapped %v, want each tool once", wrapped)
	}
	for _, name := range []string{"a", "b"} {
		a, _ := spec.Network.Agent(name)
		out, err := a.Tools[0].Func(t.Context(), json.RawMessage(`{}`))
		if err != nil || out != "wrapped found" {
			t.Errorf("agent %s's lookup = %q, %v; want the wrapper's answer", name, out, err)
		}
	}
}
