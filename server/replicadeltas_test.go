package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/servertest"
	"github.com/batonhq/baton/internal/testdb"
)

// TestReplicaDeltas: two replicas on one PostgreSQL database (two services,
// each with its own connections and LISTEN, as two processes have). A run
// streams on replica B; clients of its thread and of the run on replica A
// get its text deltas live, with the ids they have on B, then its message;
// a client of the thread on B gets the same deltas.
func TestReplicaDeltas(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	schema := testdb.Schema(t, url)
	a := servertest.SetupStore(t, testdb.Postgres(t, url, schema), withSlow(t))
	b := servertest.SetupStore(t, testdb.Postgres(t, url, schema), withSlow(t))
	thread := a.Thread(t, a.KeyA, "slow")
	events := "/v1/threads/" + thread + "/events"
	_, onA := a.Stream(t, a.KeyA, "GET", events, nil)
	_, onB := b.Stream(t, a.KeyA, "GET", events, nil)
	for _, ch := range []<-chan servertest.Event{onA, onB} {
		servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "thread" })
	}
	time.Sleep(300 * time.Millisecond) // the streams' interest announced
	resp, run := b.Stream(t, a.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "talk to me", "stream": true})
	runID := resp.Header.Get("Baton-Run-Id")
	// A client of the run on A, from its first delta on.
	first := servertest.Collect(t, onA, func(e servertest.Event) bool { return e.Type == "text_delta" })
	_, runOnA := a.Stream(t, a.KeyA, "GET", "/v1/threads/"+thread+"/runs/"+runID+"/events", nil)
	end := func(e servertest.Event) bool { return e.Type == "run_end" }
	gotA := append(first, servertest.Collect(t, onA, end)...)
	gotB := servertest.Collect(t, onB, end)
	own := servertest.Collect(t, run, end)
	runA := servertest.Collect(t, runOnA, end)

	deltas := func(evs []servertest.Event) (ids []string, text string) {
		var sb strings.Builder
		for _, e := range evs {
			if e.Type == "text_delta" {
				ids = append(ids, e.ID+" "+e.Raw)
				sb.WriteString(e.Data["delta"].(string))
			}
		}
		return ids, sb.String()
	}
	idsA, textA := deltas(gotA)
	idsB, textB := deltas(gotB)
	if textB != slowAnswer || len(idsB) != 16 {
		t.Fatalf("the thread on the executing replica: %d deltas %q", len(idsB), textB)
	}
	// Replica A got the deltas from the first one it got on: every one
	// after it, with B's ids and data, in order.
	if len(idsA) < len(idsB)/2 || !strings.HasSuffix(textB, textA) {
		t.Fatalf("replica A got %d of %d deltas (%q of %q)", len(idsA), len(idsB), textA, textB)
	}
	for i, id := range idsA {
		if want := idsB[len(idsB)-len(idsA)+i]; id != want {
			t.Fatalf("replica A's delta %d: %s, want %s (the executing replica's)", i, id, want)
		}
	}
	t.Logf("replica A got %d of the %d deltas", len(idsA), len(idsB))
	checkThreadIDs(t, "replica A", gotA)
	// The run's stream on A carries them too, with the run stream's ids.
	runDeltas := map[string]bool{}
	for _, e := range own {
		if e.Type == "text_delta" {
			runDeltas[e.ID+" "+e.Raw] = true
		}
	}
	n := 0
	for _, e := range runA {
		if e.Type == "text_delta" {
			n++
			if !runDeltas[e.ID+" "+e.Raw] {
				t.Fatalf("the run's stream on A: delta %s %s is not one of the run's on B", e.ID, e.Raw)
			}
		}
	}
	if n == 0 || runA[len(runA)-1].Data["status"] != "completed" {
		t.Fatalf("the run's stream on A: %d deltas, %v", n, servertest.Types(runA))
	}
}
