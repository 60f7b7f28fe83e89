//go:build unix

package threadhandoff_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threadhandoff"
)

func init() { extraHelpers["decide-killed"] = helperDecideKilled }

// TestMirrorSurvivesKill: a process SIGKILLed the moment the transaction
// of its approval has committed (before anything after it runs) leaves the
// approval and its thread_summaries row, on SQLite and PostgreSQL.
func TestMirrorSurvivesKill(t *testing.T) {
	eachProposedForProcesses(t, func(t *testing.T, b *bundle, pend *threadhandoff.Pending) {
		cmd, out := helperCmd(t, b, "decide-killed", "THREADHANDOFF_HELPER_INTERRUPT="+pend.Interrupt.ID)
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("helper: %v; want it killed by SIGKILL after the commit\n%s", err, out)
		}
		// The approval committed before the kill.
		in := b.interrupt(t, pend.Interrupt.ID)
		if in.Status != store.InterruptDecided {
			t.Fatalf("interrupt %s after the kill; want decided", in.Status)
		}
		lh := threadhandoff.LastHandoffOf(b.thread(t, b.parent.ID))
		if lh == nil || lh.HandoffID != pend.Proposal.HandoffID {
			t.Fatalf("last_handoff = %+v", lh)
		}
		ts, err := b.st.GetThreadSummary(t.Context(), &store.GetThreadSummaryParams{OwnerID: owner, HandoffID: pend.Proposal.HandoffID})
		if err != nil || ts.ChildThreadID != lh.ChildThreadID || ts.Markdown != pend.Proposal.Markdown || ts.AgentID != assistant {
			t.Fatalf("thread summary after the kill = %+v, %v; want the approved summary", ts, err)
		}
	})
}

// helperDecideKilled approves THREADHANDOFF_HELPER_INTERRUPT with the
// default mirror and SIGKILLs its own process as soon as the decision's
// transaction has committed.
func helperDecideKilled(t *testing.T) {
	svc := helperServiceOn(t, killAfterDecision{helperStore(t)}, false)
	_, err := svc.Decide(context.Background(), &threadhandoff.DecideParams{Owner: owner, InterruptID: os.Getenv("THREADHANDOFF_HELPER_INTERRUPT"), Decision: approve})
	t.Fatalf("Decide returned (%v); the process should have been killed after its commit", err)
}

// killAfterDecision is a store whose process is SIGKILLed when a
// transaction that decided an interrupt has committed.
type killAfterDecision struct{ store.Store }

func (k killAfterDecision) Tx(ctx context.Context, fn func(tx store.Tx) error) error {
	var decided bool
	err := k.Store.Tx(ctx, func(tx store.Tx) error {
		decided = false
		return fn(decideSpy{Tx: tx, decided: &decided})
	})
	if err == nil && decided {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	return err
}

// decideSpy notes that its transaction decided an interrupt.
type decideSpy struct {
	store.Tx
	decided *bool
}

func (d decideSpy) DecideInterrupt(ctx context.Context, p *store.DecideInterruptParams) (*store.Interrupt, error) {
	*d.decided = true
	return d.Tx.DecideInterrupt(ctx, p)
}
