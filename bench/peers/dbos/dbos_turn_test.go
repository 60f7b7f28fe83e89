package dbospeer

import (
	"context"
	"fmt"
	"testing"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	bc "github.com/batonhq/baton/bench/continuationbench"
)

// TestDBOSTurn runs the DBOS peer's workflow through its queue on each
// backend and checks what it wrote: the thread's five messages in order,
// the placeholder completed with the answer.
func TestDBOSTurn(t *testing.T) {
	for _, be := range bc.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			st := be.Open(t)
			dctx, p, q := openDBOS(t, st)
			for i := range 3 {
				id := fmt.Sprintf("test-%d", i)
				h, err := dbos.RunWorkflow(dctx, p.turn, turnIn{ID: id, Input: "Where is order 1234?"}, dbos.WithQueue(q), dbos.WithWorkflowID(id))
				if err != nil {
					t.Fatal(err)
				}
				got, err := h.GetResult()
				if err != nil {
					t.Fatal(err)
				}
				if want := "Your order 1234 has shipped."; got != want {
					t.Fatalf("answer %q, want %q", got, want)
				}
				var roles, status string
				ctx := context.Background()
				if err := p.scan(ctx, `SELECT string_agg(role, ',' ORDER BY seq) FROM `+p.prefix+`app_messages WHERE thread_id = $1`, []any{id}, &roles); err != nil {
					t.Fatal(err)
				}
				if want := "user,assistant,assistant,tool,assistant"; roles != want {
					t.Errorf("roles %s, want %s", roles, want)
				}
				if err := p.scan(ctx, `SELECT status FROM `+p.prefix+`app_messages WHERE id = $1`, []any{id + "-p"}, &status); err != nil {
					t.Fatal(err)
				}
				if status != "completed" {
					t.Errorf("placeholder %s", status)
				}
				if p.started.Get(id).IsZero() || p.resumed.Get(id).IsZero() || p.finished.Get(id).IsZero() {
					t.Errorf("stamps missing for %s", id)
				}
			}
		})
	}
}
