package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/servertest"
	"github.com/batonhq/baton/internal/testdb"
)

// TestForkThreadReplay: a fork that shares its source's first run (the
// source's rows, with that run's message ids) replays from its start
// (?after=0) only the events of its own run: the source's run is not
// rebuilt on the fork's stream. Its messages are the source's up to the
// point, then its own. SQLite and PostgreSQL.
func TestForkThreadReplay(t *testing.T) {
	t.Parallel()
	for name, open := range testdb.Backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := servertest.SetupStore(t, open(t))
			thread := b.Thread(t, b.KeyA, "research")
			turn := func(thread, input string) string {
				t.Helper()
				r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": input})
				var res struct{ ID, Status string }
				if r.Status != http.StatusOK {
					t.Fatalf("run: %d %s", r.Status, r.Body)
				}
				r.JSON(t, &res)
				return res.ID
			}
			first := turn(thread, "How did EV sales develop?")
			turn(thread, "And in 2024?")
			src := messagesOf(t, b, thread)
			at := ""
			for _, m := range src.Data {
				if strings.HasPrefix(m.ID, first+"-") {
					at = m.ID
				}
			}
			r, f := forkOf(t, b, b.KeyA, thread, map[string]any{"at": at})
			if r.Status != http.StatusCreated {
				t.Fatalf("fork: %d %s", r.Status, r.Body)
			}
			got := messagesOf(t, b, f.ID)
			if len(got.Data) == 0 || got.Data[0].ID != src.Data[0].ID || got.Data[len(got.Data)-1].ID != at {
				t.Fatalf("the fork's messages %+v, want the source's up to %s", got, at)
			}
			own := turn(f.ID, "And in 2025?")
			_, ch := b.Stream(t, b.KeyA, "GET", "/v1/threads/"+f.ID+"/events?after=0", nil)
			events := servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "run_end" })
			for _, e := range events {
				if id, ok := e.Data["run_id"].(string); ok && id != own {
					t.Fatalf("the fork's replay has an event %s of run %s, not its own %s: %v", e.Type, id, own, servertest.Types(events))
				}
			}
			if events[0].Type != "run_start" {
				t.Fatalf("the fork's replay: %v", servertest.Types(events))
			}
		})
	}
}
