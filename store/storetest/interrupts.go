package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/batonhq/baton/store"
)

func newInterrupt(b *bundle, th *store.Thread, kind, id string) *store.CreateInterruptParams {
	p := &store.CreateInterruptParams{OwnerID: b.owner, ID: id, Kind: kind, ThreadID: th.ID, Network: "net", Agent: "billing",
		Payload: json.RawMessage(`{"schema_version":1,"summary_md":"### Refund ☂"}`)}
	if kind == store.InterruptRun {
		p.RunID = "run-" + id
	}
	return p
}

func testInterrupts(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	h1 := checkInterruptsCreated(t, s, b, th)
	checkInterruptDecided(t, s, b, th, h1)
	checkInterruptsMissing(t, s, b, th)
}

// checkInterruptsCreated: a run interrupt and a thread handoff created on
// th read back and list as created; a second pending handoff on th and a
// taken id conflict, another owner's same ids do not. It returns the
// handoff.
func checkInterruptsCreated(t *testing.T, s store.Store, b *bundle, th *store.Thread) *store.Interrupt {
	run := Must(s.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptRun, "run-i3")))(t)
	if run.Kind != store.InterruptRun || run.Status != store.InterruptPending || run.RunID != "run-run-i3" || run.ThreadID != th.ID ||
		run.Network != "net" || run.Agent != "billing" || run.OwnerID != b.owner || run.Decision != nil || run.Outcome != nil ||
		!run.DecidedAt.IsZero() || !jsonEqual(run.Payload, []byte(`{"schema_version":1,"summary_md":"### Refund ☂"}`)) {
		t.Fatalf("CreateInterrupt = %+v", run)
	}
	checkTime(t, "CreatedAt", run.CreatedAt)
	hp := newInterrupt(b, th, store.InterruptThreadHandoff, "h-"+uuid.NewString())
	h1 := Must(s.CreateInterrupt(b.ctx, hp))(t)
	// One pending thread handoff per thread, one id per owner.
	_, err := s.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptThreadHandoff, "h-"+uuid.NewString()))
	wantErr(t, err, store.ErrConflict)
	_, err = s.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptRun, "run-i3"))
	wantErr(t, err, store.ErrConflict)
	// A thread without any, and the same ids for another owner, are fine.
	other := Must(s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.other}))(t)
	theirs := newInterrupt(b, other, store.InterruptRun, "run-i3")
	theirs.OwnerID = b.other
	Must(s.CreateInterrupt(b.ctx, theirs))(t)

	got := Must(s.GetInterrupt(b.ctx, &store.GetInterruptParams{OwnerID: b.owner, ID: h1.ID}))(t)
	if !reflect.DeepEqual(normInterrupt(got), normInterrupt(h1)) {
		t.Fatalf("GetInterrupt = %+v, want %+v", got, h1)
	}
	all := Must(s.ListInterrupts(b.ctx, &store.ListInterruptsParams{OwnerID: b.owner, ThreadID: th.ID}))(t)
	if len(all) != 2 || all[0].ID != run.ID || all[1].ID != h1.ID {
		t.Fatalf("ListInterrupts = %+v", all)
	}
	handoffs := Must(s.ListInterrupts(b.ctx, &store.ListInterruptsParams{OwnerID: b.owner, ThreadID: th.ID, Kind: store.InterruptThreadHandoff,
		Status: store.InterruptPending}))(t)
	if len(handoffs) != 1 || handoffs[0].ID != h1.ID {
		t.Fatalf("ListInterrupts(thread_handoff, pending) = %+v", handoffs)
	}
	return h1
}

// checkInterruptDecided: the handoff h1 on th decided once (a second
// decision loses and learns the first), and decided or superseded, it no
// longer blocks a new proposal.
func checkInterruptDecided(t *testing.T, s store.Store, b *bundle, th *store.Thread, h1 *store.Interrupt) {
	d := &store.DecideInterruptParams{OwnerID: b.owner, ID: h1.ID, Status: store.InterruptDecided,
		Decision: json.RawMessage(`{"type":"approve"}`), Outcome: json.RawMessage(`{"child_thread_id":"c1"}`)}
	dec := Must(s.DecideInterrupt(b.ctx, d))(t)
	if dec.Status != store.InterruptDecided || !jsonEqual(dec.Decision, d.Decision) || !jsonEqual(dec.Outcome, d.Outcome) {
		t.Fatalf("DecideInterrupt = %+v", dec)
	}
	checkTime(t, "DecidedAt", dec.DecidedAt)
	// A second decision loses and learns the first.
	_, err := s.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: h1.ID, Status: store.InterruptDecided,
		Decision: json.RawMessage(`{"type":"reject"}`), Outcome: json.RawMessage(`{}`)})
	np := wantAs[*store.NotPendingError](t, err)
	wantErr(t, err, store.ErrConflict)
	if np.Interrupt.Status != store.InterruptDecided || !jsonEqual(np.Interrupt.Outcome, d.Outcome) || !jsonEqual(np.Interrupt.Decision, d.Decision) {
		t.Fatalf("NotPendingError carries %+v", np.Interrupt)
	}
	// Decided, it no longer blocks a new proposal.
	h2 := Must(s.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptThreadHandoff, "h-"+uuid.NewString())))(t)
	Must(s.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: h2.ID, Status: store.InterruptSuperseded,
		Outcome: json.RawMessage(`{"superseded_by":"h3"}`)}))(t)
	Must(s.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptThreadHandoff, "h-"+uuid.NewString())))(t)
	pending := Must(s.ListInterrupts(b.ctx, &store.ListInterruptsParams{OwnerID: b.owner, ThreadID: th.ID, Status: store.InterruptPending}))(t)
	if len(pending) != 2 {
		t.Fatalf("pending = %+v, want the run's and the newest handoff", pending)
	}
	if got := Must(s.ListInterrupts(b.ctx, &store.ListInterruptsParams{OwnerID: b.owner, ThreadID: "missing"}))(t); got == nil || len(got) != 0 {
		t.Fatalf("ListInterrupts of a missing thread = %#v, want empty", got)
	}
}

// checkInterruptsMissing: an interrupt of a thread that does not exist is
// not found, a run interrupt without a thread is fine, a missing interrupt
// cannot be decided.
func checkInterruptsMissing(t *testing.T, s store.Store, b *bundle, th *store.Thread) {
	// A thread that does not exist; a run interrupt without a thread.
	missing := newInterrupt(b, th, store.InterruptRun, "x-i1")
	missing.ThreadID = "missing"
	_, err := s.CreateInterrupt(b.ctx, missing)
	wantErr(t, err, store.ErrNotFound)
	missing.ThreadID = ""
	if got := Must(s.CreateInterrupt(b.ctx, missing))(t); got.ThreadID != "" {
		t.Fatalf("run interrupt without a thread = %+v", got)
	}
	_, err = s.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: "missing", Status: store.InterruptDecided, Outcome: json.RawMessage(`{}`)})
	wantErr(t, err, store.ErrNotFound)
}

func normInterrupt(in *store.Interrupt) store.Interrupt {
	c := *in
	c.Payload, c.Decision, c.Outcome = nil, nil, nil
	return c
}

// testInterruptConflictsInTx checks that the conflicts of CreateInterrupt
// and DecideInterrupt leave a transaction usable: a caller decides what to
// do with them (PostgreSQL aborts a transaction on a statement's error).
func testInterruptConflictsInTx(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	first := Must(s.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptThreadHandoff, "h-"+uuid.NewString())))(t)
	Must(s.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: first.ID, Status: store.InterruptDecided, Outcome: json.RawMessage(`{}`)}))(t)
	second := Must(s.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptThreadHandoff, "h-"+uuid.NewString())))(t)
	err := s.Tx(b.ctx, func(tx store.Tx) error {
		if _, err := tx.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptThreadHandoff, "h-"+uuid.NewString())); !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("second pending handoff: %v, want ErrConflict", err)
		}
		if _, err := tx.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptThreadHandoff, second.ID)); !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("taken id: %v, want ErrConflict", err)
		}
		_, err := tx.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: first.ID, Status: store.InterruptDecided, Outcome: json.RawMessage(`{}`)})
		if np, ok := errors.AsType[*store.NotPendingError](err); !ok || np.Interrupt.ID != first.ID {
			return fmt.Errorf("decided twice: %v, want a NotPendingError", err)
		}
		if _, err := tx.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: second.ID, Status: store.InterruptSuperseded,
			Outcome: json.RawMessage(`{}`)}); err != nil {
			return err
		}
		_, err = tx.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptThreadHandoff, "h-third"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	pending := Must(s.ListInterrupts(b.ctx, &store.ListInterruptsParams{OwnerID: b.owner, ThreadID: th.ID, Status: store.InterruptPending}))(t)
	if len(pending) != 1 || pending[0].ID != "h-third" {
		t.Fatalf("pending after the transaction = %+v", pending)
	}
}

func testInterruptConcurrent(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	const n = 8
	// Concurrent proposals: one is stored.
	oneWinner(t, race(n, func(i int) error {
		return errOf(s.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptThreadHandoff, fmt.Sprintf("h-%d-%s", i, uuid.NewString()))))
	}))
	pending := Must(s.ListInterrupts(b.ctx, &store.ListInterruptsParams{OwnerID: b.owner, ThreadID: th.ID, Status: store.InterruptPending}))(t)
	if len(pending) != 1 {
		t.Fatalf("pending = %+v", pending)
	}
	// Concurrent decisions: one wins, the others see its outcome.
	id := pending[0].ID
	errs := race(n, func(i int) error {
		return errOf(s.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: id, Status: store.InterruptDecided,
			Decision: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), Outcome: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}))
	})
	winner := oneWinner(t, errs)
	for i, err := range errs {
		if i == winner {
			continue
		}
		np := wantAs[*store.NotPendingError](t, err)
		if want := fmt.Sprintf(`{"n":%d}`, winner); !jsonEqual(np.Interrupt.Outcome, []byte(want)) {
			t.Fatalf("loser %d sees outcome %s, want %s", i, np.Interrupt.Outcome, want)
		}
	}
}
