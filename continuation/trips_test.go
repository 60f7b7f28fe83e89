package continuation

import (
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/store"
)

// TestInlineTurnRoundTrips: on PostgreSQL an inline turn that hands its
// slow tool over is three round trips: its start on a new thread (BEGIN,
// scope and lock, checkpoint with the thread and the user's message, lease,
// COMMIT), and the hand-over — the suspension's checkpoint, the lease's
// release, the job run with its placeholder and River's insert in one
// batch, then River's NOTIFY, the COMMIT and the draft's NOTIFY after it.
func TestInlineTurnRoundTrips(t *testing.T) {
	t.Parallel()
	u := pgURL(t)
	if u == "" {
		t.Skip("no PostgreSQL: set " + testdb.URLVar)
	}
	st, trips := testdb.PostgresTraced(t, u, store.Options{MaxConns: pgMaxConns})
	tools := newToolLog()
	call := scripted.Step{Text: "Let me look that up.", ToolCalls: []scripted.Call{{Name: "lookup", Arguments: []byte(`{"order":"1234"}`)}}}
	b := setup(t, backend{"Postgres", func(testing.TB) store.Store { return st }}, network(t, tools, "", scripted.Options{}, call), tools, nil)
	has := func(trip []string, prefix string) bool {
		return slices.ContainsFunc(trip, func(q string) bool { return strings.Contains(q, prefix) })
	}
	for i := range 2 { // the first sets the owner up
		trips.Take()
		b.handOver(t)
		got := trips.Take()
		if i == 0 {
			continue
		}
		// Lookup's reads come last: leave them out.
		for len(got) > 0 && !has(got[len(got)-1], "commit") {
			got = got[:len(got)-1]
		}
		if len(got) != 3 ||
			!has(got[0], "INSERT INTO checkpoints") || !has(got[0], "INSERT INTO run_leases") || !has(got[0], "commit") ||
			!has(got[1], "INSERT INTO checkpoints") || !has(got[1], "DELETE FROM run_leases") || !has(got[1], "INSERT INTO job_runs") || !has(got[1], "river_job") ||
			has(got[1], "commit") || !has(got[2], "commit") {
			t.Errorf("round trips of the turn:\n%s", strings.Join(func() []string {
				var out []string
				for _, trip := range got {
					out = append(out, strings.Join(trip, "\n    "))
				}
				return out
			}(), "\n--\n"))
		}
	}
}
