package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/servertest"
)

// TestEditRefusedBySchema: an approval edit whose arguments fail the tool's
// JSON Schema answers 400 naming the schema error (param args), streaming
// or not; nothing runs and the interrupt stays pending, so a valid edit
// then resumes the run. On every backend.
func TestEditRefusedBySchema(t *testing.T) {
	t.Parallel()
	servertest.OnBackends(t, func(t *testing.T, b *servertest.Bundle) {
		thread, _, intr := b.Interrupted(t, b.KeyA)
		for _, tc := range []struct {
			body map[string]any
			want string
		}{
			{map[string]any{"type": "edit", "args": map[string]any{"order_id": "1234", "amount": "lots"}}, "at /amount: got string, want number"},
			{map[string]any{"type": "edit", "args": map[string]any{"order_id": "1234", "amount": -5}, "stream": true}, "at /amount: exclusiveMinimum"},
			{map[string]any{"decisions": []any{map[string]any{"type": "edit", "args": map[string]any{"amount": 5}}}}, "missing property 'order_id'"},
		} {
			r := b.Do(t, b.KeyA, "POST", "/v1/interrupts/"+intr+"/decision", tc.body)
			var e struct {
				Error struct{ Type, Message, Param string }
			}
			r.JSON(t, &e)
			if r.Status != http.StatusBadRequest || e.Error.Type != "invalid_request" || e.Error.Param != "args" ||
				!strings.Contains(e.Error.Message, "issue_refund") || !strings.Contains(e.Error.Message, tc.want) {
				t.Fatalf("edit %v: %d %s, want 400 naming %q", tc.body, r.Status, r.Body, tc.want)
			}
			if r := b.Do(t, b.KeyA, "GET", "/v1/interrupts/"+intr, nil); !strings.Contains(string(r.Body), `"status":"pending"`) {
				t.Fatalf("after a refused edit: %s", r.Body)
			}
		}
		r := b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread+"/messages", nil)
		if strings.Contains(string(r.Body), "R-77") {
			t.Fatalf("the refund ran: %s", r.Body)
		}
		r = b.Do(t, b.KeyA, "POST", "/v1/interrupts/"+intr+"/decision", map[string]any{"type": "edit", "args": map[string]any{"order_id": "1234", "amount": 10}})
		if r.Status != 200 || !strings.Contains(string(r.Body), `"status":"completed"`) {
			t.Fatalf("valid edit: %d %s", r.Status, r.Body)
		}
	})
}
