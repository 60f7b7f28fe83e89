package continuation

import (
	"context"
	"database/sql"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/threads"
)

// TestRiverJobCompletedWithRun: the River job of a continuation is
// completed in the run's final transaction, as River itself sees it
// (JobList), before the delivery returns to River; so the thread takes its
// next hand-over at once, River's unique job of the thread being finished.
// On PostgreSQL baton writes River's completion itself (pgComplete): this
// is what ties it to River's schema.
func TestRiverJobCompletedWithRun(t *testing.T) {
	t.Parallel()
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			tools := newToolLog()
			finished, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			net := network(t, tools, "", scripted.Options{}, scripted.Step{Text: "Your order 1234 has shipped."},
				scripted.Step{ToolCalls: []scripted.Call{{Name: "lookup", Arguments: json.RawMessage(`{"order":"5678"}`)}}},
				scripted.Step{Text: "Your order 5678 has shipped."})
			b := setup(t, be, net, tools, func(c *Config) {
				c.testHook = func(step string) error {
					if step == "finished" {
						once.Do(func() {
							close(finished)
							<-release
						})
					}
					return nil
				}
			})
			thread, _, h := b.handOver(t)
			b.start(t)
			select {
			case <-finished:
			case <-time.After(20 * time.Second):
				t.Fatal("the continuation did not finish")
			}
			jobs := riverJobRows(t, b)
			if len(jobs) != 1 || jobs[0].State != rivertype.JobStateCompleted || jobs[0].FinalizedAt == nil {
				close(release)
				t.Fatalf("River's job before the delivery returned: %+v, want one, completed, finalized", jobRowStates(jobs))
			}
			// The delivery has not returned yet: the thread is free all the same.
			var end runstate.Status
			for ev, err := range b.svc.Turn(context.Background(), owner, "And order 5678?", threads.TurnOptions{ThreadID: thread, RunOptions: b.cont.RunOptions()}) {
				if err != nil {
					close(release)
					t.Fatalf("the thread's next turn: %v", err)
				}
				if e, ok := ev.(*runner.RunEndEvent); ok {
					end = e.Status
				}
			}
			close(release)
			if end != runstate.StatusSuspended {
				t.Fatalf("the thread's next turn ended %s, want suspended (handed over)", end)
			}
			b.waitMessage(t, h.MessageID, 20*time.Second)
			if jobs := waitRiver(t, b.st, 20*time.Second); jobs["completed"] != 2 {
				t.Fatalf("river jobs %v, want 2 completed", jobs)
			}
		})
	}
}

// riverJobRows lists the continuation jobs through River's client.
func riverJobRows(t testing.TB, b *bundle) []*rivertype.JobRow {
	t.Helper()
	params := river.NewJobListParams().Kinds(Kind).First(100)
	var res *river.JobListResult
	var err error
	switch q := b.cont.q.(type) {
	case *riverQueue[pgx.Tx, *pgWakeDriver]:
		res, err = q.client.JobList(t.Context(), params)
	case *riverQueue[*sql.Tx, *sqliteWakeDriver]:
		res, err = q.client.JobList(t.Context(), params)
	default:
		t.Fatalf("queue %T", b.cont.q)
	}
	if err != nil {
		t.Fatal(err)
	}
	return res.Jobs
}

func jobRowStates(jobs []*rivertype.JobRow) []string {
	var out []string
	for _, j := range jobs {
		s := string(j.State)
		if j.FinalizedAt != nil {
			s += " finalized " + j.FinalizedAt.Format(time.RFC3339Nano)
		}
		out = append(out, s)
	}
	return out
}
