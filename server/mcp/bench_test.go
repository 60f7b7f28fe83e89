package mcp_test

import (
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/batonhq/baton/internal/servertest"
)

// BenchmarkToolCall: one call of a network's tool (a turn of the support
// network's triage, answered by the scripted model, on a new thread) over
// streamable HTTP on loopback, from the Go SDK's client, with progress
// notifications.
func BenchmarkToolCall(b *testing.B) {
	bd := servertest.Setup(b)
	var cl client
	cs := cl.connect(b, bd, bd.KeyA, "support", "")
	for b.Loop() {
		p := &sdk.CallToolParams{Name: "support", Arguments: map[string]any{"message": "Hi there"}}
		p.SetProgressToken("p")
		res, err := cs.CallTool(b.Context(), p)
		if err != nil || res.IsError {
			b.Fatalf("call: %v %+v", err, res)
		}
	}
}
