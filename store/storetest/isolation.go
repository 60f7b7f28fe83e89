package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
)

// testOwnerIsolation reads and writes every kind of row of one owner as
// another: all of it is ErrNotFound, and nothing changes.
func testOwnerIsolation(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	msg := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.User("secret")}}}))(t)[0]
	Must(s.UpsertDraft(b.ctx, &store.UpsertDraftParams{OwnerID: b.owner, MessageID: msg.ID, Text: "secret draft"}))(t)
	run := "run-" + uuid.NewString()
	cp := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(run, th.ID, 1)}))(t)
	job := Must(s.CreateJobRun(b.ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: "k-" + run, Kind: "k", ThreadID: th.ID}))(t).Run
	hid := "h-" + run
	Must(s.UpsertThreadSummary(b.ctx, &store.UpsertThreadSummaryParams{OwnerID: b.owner, HandoffID: hid, Summary: json.RawMessage(`{}`)}))(t)
	Must(s.PutMemoryDocument(b.ctx, &store.PutMemoryDocumentParams{OwnerID: b.owner, AgentID: "a-" + run, Content: "secret"}))(t)
	key := Must(s.CreateAPIKey(b.ctx, &store.CreateAPIKeyParams{OwnerID: b.owner}))(t)
	in := Must(s.CreateInterrupt(b.ctx, &store.CreateInterruptParams{OwnerID: b.owner, ID: "i-" + run, Kind: store.InterruptThreadHandoff, ThreadID: th.ID,
		Payload: json.RawMessage(`{"summary_md":"secret"}`)}))(t)

	o := b.other
	for name, call := range map[string]func() error{
		"GetOwner":  func() error { return errOf(s.GetOwner(b.ctx, &store.GetOwnerParams{ID: "missing"})) },
		"GetThread": func() error { return errOf(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: o, ID: th.ID})) },
		"UpdateThreadMetadata": func() error {
			return errOf(s.UpdateThreadMetadata(b.ctx, &store.UpdateThreadMetadataParams{OwnerID: o, ThreadID: th.ID, Namespace: "x", Patch: json.RawMessage(`1`)}))
		},
		"SetActiveAgent": func() error {
			return errOf(s.SetActiveAgent(b.ctx, &store.SetActiveAgentParams{OwnerID: o, ThreadID: th.ID, Agent: "x"}))
		},
		"CreateThreadChild": func() error {
			return errOf(s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: o, ParentID: th.ID}))
		},
		"AppendMessages": func() error {
			return errOf(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: o, ThreadID: th.ID, Messages: []store.NewMessage{{Message: message.User("x")}}}))
		},
		"ListMessages": func() error {
			return errOf(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: o, ThreadID: th.ID}))
		},
		"GetMessage": func() error { return errOf(s.GetMessage(b.ctx, &store.GetMessageParams{OwnerID: o, ID: msg.ID})) },
		"UpdateMessage": func() error {
			return errOf(s.UpdateMessage(b.ctx, &store.UpdateMessageParams{OwnerID: o, ID: msg.ID, Status: message.StatusError}))
		},
		"GetDraft": func() error { return errOf(s.GetDraft(b.ctx, &store.GetDraftParams{OwnerID: o, MessageID: msg.ID})) },
		"UpsertDraft": func() error {
			return errOf(s.UpsertDraft(b.ctx, &store.UpsertDraftParams{OwnerID: o, MessageID: msg.ID, Text: "x"}))
		},
		"GetCheckpoint": func() error { return errOf(s.GetCheckpoint(b.ctx, &store.GetCheckpointParams{OwnerID: o, ID: cp.ID})) },
		"LatestCheckpointRun": func() error {
			return errOf(s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: o, RunID: run}))
		},
		"LatestCheckpointThread": func() error {
			return errOf(s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: o, ThreadID: th.ID}))
		},
		"SaveCheckpointOnThread": func() error {
			return errOf(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: o, State: newState(run, th.ID, 9)}))
		},
		"GetJobRun": func() error { return errOf(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: o, ID: job.ID})) },
		"GetJobRunByKey": func() error {
			return errOf(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: o, IdempotencyKey: job.IdempotencyKey}))
		},
		"TransitionJobRun": func() error {
			return errOf(s.TransitionJobRun(b.ctx, &store.TransitionJobRunParams{OwnerID: o, ID: job.ID, To: store.JobCanceled}))
		},
		"GetThreadSummary": func() error {
			return errOf(s.GetThreadSummary(b.ctx, &store.GetThreadSummaryParams{OwnerID: o, HandoffID: hid}))
		},
		"GetMemoryDocument": func() error {
			return errOf(s.GetMemoryDocument(b.ctx, &store.GetMemoryDocumentParams{OwnerID: o, AgentID: "a-" + run}))
		},
		"RevokeAPIKey": func() error {
			return errOf(s.RevokeAPIKey(b.ctx, &store.RevokeAPIKeyParams{OwnerID: o, ID: key.Key.ID}))
		},
		"GetInterrupt": func() error { return errOf(s.GetInterrupt(b.ctx, &store.GetInterruptParams{OwnerID: o, ID: in.ID})) },
		"DecideInterrupt": func() error {
			return errOf(s.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: o, ID: in.ID, Status: store.InterruptDecided, Outcome: json.RawMessage(`{}`)}))
		},
		"CreateInterruptOnThread": func() error {
			_, err := s.CreateInterrupt(b.ctx, &store.CreateInterruptParams{OwnerID: o, ID: "x", Kind: store.InterruptThreadHandoff, ThreadID: th.ID,
				Payload: json.RawMessage(`{}`)})
			return err
		},
	} {
		if err := call(); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s as another owner: error = %v, want ErrNotFound", name, err)
		}
	}
	page := Must(s.ListThreads(b.ctx, &store.ListThreadsParams{OwnerID: o}))(t)
	if len(page.Threads) != 0 {
		t.Errorf("another owner lists %d threads", len(page.Threads))
	}
	// Nothing changed.
	if got := Must(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: th.ID}))(t); got.Version != th.Version || got.ActiveAgent != th.ActiveAgent {
		t.Errorf("thread changed: %+v", got)
	}
	if got := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t); len(got) != 1 || got[0].Status != message.StatusCompleted {
		t.Errorf("messages changed: %+v", got)
	}
	if got := Must(s.GetDraft(b.ctx, &store.GetDraftParams{OwnerID: b.owner, MessageID: msg.ID}))(t); got.Text != "secret draft" {
		t.Errorf("draft changed: %+v", got)
	}
	if got := Must(s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: run}))(t); got.ID != cp.ID {
		t.Errorf("checkpoint changed: %+v", got)
	}
	if got := Must(s.GetJobRun(b.ctx, &store.GetJobRunParams{OwnerID: b.owner, ID: job.ID}))(t); got.Status != store.JobQueued {
		t.Errorf("job run changed: %+v", got)
	}
	if got := Must(s.LookupAPIKey(b.ctx, &store.LookupAPIKeyParams{Hash: key.Key.Hash}))(t); !got.RevokedAt.IsZero() {
		t.Errorf("api key revoked by another owner")
	}
	if got := Must(s.ListInterrupts(b.ctx, &store.ListInterruptsParams{OwnerID: o, ThreadID: th.ID}))(t); len(got) != 0 {
		t.Errorf("another owner lists %d interrupts", len(got))
	}
	if got := Must(s.GetInterrupt(b.ctx, &store.GetInterruptParams{OwnerID: b.owner, ID: in.ID}))(t); got.Status != store.InterruptPending {
		t.Errorf("interrupt decided by another owner: %+v", got)
	}
}

func testInvalidParams(t *testing.T, s store.Store, b *bundle) {
	ctx := b.ctx
	for name, call := range map[string]func() error{
		"EnsureOwner":    func() error { return errOf(s.EnsureOwner(ctx, &store.EnsureOwnerParams{})) },
		"CreateThread":   func() error { return errOf(s.CreateThread(ctx, &store.CreateThreadParams{})) },
		"GetThread":      func() error { return errOf(s.GetThread(ctx, &store.GetThreadParams{OwnerID: b.owner})) },
		"ListThreads":    func() error { return errOf(s.ListThreads(ctx, &store.ListThreadsParams{OwnerID: b.owner, Limit: -1})) },
		"AppendMessages": func() error { return errOf(s.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: b.owner})) },
		"ListMessages":   func() error { return errOf(s.ListMessages(ctx, &store.ListMessagesParams{ThreadID: "t"})) },
		"UpsertDraft":    func() error { return errOf(s.UpsertDraft(ctx, &store.UpsertDraftParams{OwnerID: b.owner})) },
		"LookupAPIKey":   func() error { return errOf(s.LookupAPIKey(ctx, &store.LookupAPIKeyParams{})) },
		"GetMemory":      func() error { return errOf(s.GetMemoryDocument(ctx, &store.GetMemoryDocumentParams{OwnerID: b.owner})) },
		"PutMemory": func() error {
			return errOf(s.PutMemoryDocument(ctx, &store.PutMemoryDocumentParams{OwnerID: b.owner, AgentID: "a", ExpectedVersion: -1}))
		},
		"UpsertSummary": func() error {
			return errOf(s.UpsertThreadSummary(ctx, &store.UpsertThreadSummaryParams{OwnerID: b.owner}))
		},
		"TransitionJob": func() error {
			return errOf(s.TransitionJobRun(ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: "x"}))
		},
		"GetCheckpoint": func() error { return errOf(s.GetCheckpoint(ctx, &store.GetCheckpointParams{ID: "x"})) },
		"UpdateMessage": func() error { return errOf(s.UpdateMessage(ctx, &store.UpdateMessageParams{OwnerID: b.owner})) },
		"AcquireLease": func() error {
			return errOf(s.AcquireLease(ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: "r", Holder: "h"}))
		},
		"ReleaseLease": func() error { return errOf(s.ReleaseLease(ctx, &store.ReleaseLeaseParams{OwnerID: b.owner})) },
		"RenewLeases":  func() error { return errOf(s.RenewLeases(ctx, &store.RenewLeasesParams{Holder: "h", TTL: -1})) },
		"CreateInterruptKind": func() error {
			return errOf(s.CreateInterrupt(ctx, &store.CreateInterruptParams{OwnerID: b.owner, ID: "i", Kind: "other", Payload: json.RawMessage(`{}`)}))
		},
		"CreateInterruptRunID": func() error {
			return errOf(s.CreateInterrupt(ctx, &store.CreateInterruptParams{OwnerID: b.owner, ID: "i", Kind: store.InterruptRun, Payload: json.RawMessage(`{}`)}))
		},
		"CreateInterruptThread": func() error {
			return errOf(s.CreateInterrupt(ctx, &store.CreateInterruptParams{OwnerID: b.owner, ID: "i", Kind: store.InterruptThreadHandoff, Payload: json.RawMessage(`{}`)}))
		},
		"CreateInterruptPayload": func() error {
			return errOf(s.CreateInterrupt(ctx, &store.CreateInterruptParams{OwnerID: b.owner, ID: "i", Kind: store.InterruptRun, RunID: "r", Payload: json.RawMessage(`[1]`)}))
		},
		"GetInterrupt":   func() error { return errOf(s.GetInterrupt(ctx, &store.GetInterruptParams{OwnerID: b.owner})) },
		"ListInterrupts": func() error { return errOf(s.ListInterrupts(ctx, &store.ListInterruptsParams{OwnerID: b.owner})) },
		"DecideInterruptStatus": func() error {
			return errOf(s.DecideInterrupt(ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: "i", Status: store.InterruptPending, Outcome: json.RawMessage(`{}`)}))
		},
		"DecideInterruptOutcome": func() error {
			return errOf(s.DecideInterrupt(ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: "i", Status: store.InterruptDecided, Outcome: json.RawMessage(`{`)}))
		},
	} {
		if err := call(); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: error = %v, want ErrInvalid", name, err)
		}
	}
}

func testLeases(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	run := "run-" + uuid.NewString()
	_, err := s.GetLease(b.ctx, &store.GetLeaseParams{OwnerID: b.owner, RunID: run})
	wantErr(t, err, store.ErrNotFound)
	l := Must(s.AcquireLease(b.ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: run, ThreadID: th.ID, Holder: "p1", TTL: time.Minute}))(t)
	if l.Holder != "p1" || l.ThreadID != th.ID || l.RunID != run || l.OwnerID != b.owner {
		t.Fatalf("lease %+v", l)
	}
	checkTime(t, "ExpiresAt", l.ExpiresAt)
	if d := time.Until(l.ExpiresAt); d < 50*time.Second || d > 70*time.Second {
		t.Errorf("lease expires in %s, want about a minute", d)
	}
	// Acquiring again replaces the holder (the fenced checkpoint decides).
	Must(s.AcquireLease(b.ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: run, ThreadID: th.ID, Holder: "p2", TTL: time.Minute}))(t)
	got := Must(s.GetLease(b.ctx, &store.GetLeaseParams{OwnerID: b.owner, RunID: run}))(t)
	if got.Holder != "p2" {
		t.Fatalf("holder %s, want p2", got.Holder)
	}
	// Free: p2's live lease is not taken from it; its own is renewed, an
	// expired one taken.
	_, err = s.AcquireLease(b.ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: run, ThreadID: th.ID, Holder: "p3", TTL: time.Minute, Free: true})
	wantErr(t, err, store.ErrConflict)
	if got := Must(s.GetLease(b.ctx, &store.GetLeaseParams{OwnerID: b.owner, RunID: run}))(t); got.Holder != "p2" {
		t.Fatalf("holder %s after a refused free acquire, want p2", got.Holder)
	}
	Must(s.AcquireLease(b.ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: run, ThreadID: th.ID, Holder: "p2", TTL: time.Minute, Free: true}))(t)
	freeRun := "run-" + uuid.NewString()
	Must(s.AcquireLease(b.ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: freeRun, ThreadID: th.ID, Holder: "p1", TTL: time.Millisecond}))(t)
	time.Sleep(5 * time.Millisecond)
	if l := Must(s.AcquireLease(b.ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: freeRun, ThreadID: th.ID, Holder: "p3", TTL: time.Minute, Free: true}))(t); l.Holder != "p3" {
		t.Fatalf("free acquire of an expired lease: holder %s, want p3", l.Holder)
	}
	Must(s.ReleaseLease(b.ctx, &store.ReleaseLeaseParams{OwnerID: b.owner, RunID: freeRun}))(t)
	// LatestCheckpoint with a Lease takes the run's lease with the read
	// (a continuation's delivery): free or expired, it is the holder's; a
	// live lease of another holder is left as it is, and the read answers
	// alike.
	leaseRun := "run-" + uuid.NewString()
	cp := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(leaseRun, th.ID, 1)}))(t)
	lease := &store.AcquireLeaseParams{Holder: "p4", TTL: time.Minute, ThreadID: th.ID}
	if got := Must(s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: leaseRun, Lease: lease}))(t); got.ID != cp.ID || got.State == nil {
		t.Fatalf("LatestCheckpoint with a lease: %+v", got)
	}
	if l := Must(s.GetLease(b.ctx, &store.GetLeaseParams{OwnerID: b.owner, RunID: leaseRun}))(t); l.Holder != "p4" || l.ThreadID != th.ID {
		t.Fatalf("the lease taken with the read: %+v", l)
	}
	other := &store.AcquireLeaseParams{Holder: "p5", TTL: time.Minute}
	if got := Must(s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: leaseRun, Lease: other, NoState: true}))(t); got.ID != cp.ID {
		t.Fatalf("LatestCheckpoint with another holder's lease: %+v", got)
	}
	if l := Must(s.GetLease(b.ctx, &store.GetLeaseParams{OwnerID: b.owner, RunID: leaseRun}))(t); l.Holder != "p4" {
		t.Fatalf("a read took p4's live lease for %s", l.Holder)
	}
	// In a Store.Tx the lease is written in the transaction.
	Must(s.ReleaseLease(b.ctx, &store.ReleaseLeaseParams{OwnerID: b.owner, RunID: leaseRun}))(t)
	if err := s.Tx(b.ctx, func(tx store.Tx) error {
		_, err := tx.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: leaseRun, Lease: other})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if l := Must(s.GetLease(b.ctx, &store.GetLeaseParams{OwnerID: b.owner, RunID: leaseRun}))(t); l.Holder != "p5" {
		t.Fatalf("the lease taken in a transaction: holder %s", l.Holder)
	}
	// A read of no run but one: a Lease needs RunID, a Holder and a TTL.
	for _, p := range []*store.LatestCheckpointParams{
		{OwnerID: b.owner, ThreadID: th.ID, Lease: lease},
		{OwnerID: b.owner, RunID: leaseRun, Lease: &store.AcquireLeaseParams{TTL: time.Minute}},
		{OwnerID: b.owner, RunID: leaseRun, Lease: &store.AcquireLeaseParams{Holder: "p4"}},
	} {
		_, err := s.LatestCheckpoint(b.ctx, p)
		wantErr(t, err, store.ErrInvalid)
	}
	// Its failed read (a missing run) writes nothing on PostgreSQL, and at
	// worst a lease its reader releases (SQLite writes it first).
	_, err = s.LatestCheckpoint(b.ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: "run-" + uuid.NewString(), Lease: lease})
	wantErr(t, err, store.ErrNotFound)
	// Another owner sees nothing and releases nothing.
	_, err = s.GetLease(b.ctx, &store.GetLeaseParams{OwnerID: b.other, RunID: run})
	wantErr(t, err, store.ErrNotFound)
	if ok := Must(s.ReleaseLease(b.ctx, &store.ReleaseLeaseParams{OwnerID: b.other, RunID: run}))(t); ok {
		t.Fatal("another owner released the lease")
	}
	// Conditional releases: the wrong holder, an unexpired lease.
	if ok := Must(s.ReleaseLease(b.ctx, &store.ReleaseLeaseParams{OwnerID: b.owner, RunID: run, Holder: "p1"}))(t); ok {
		t.Fatal("p1 released p2's lease")
	}
	if ok := Must(s.ReleaseLease(b.ctx, &store.ReleaseLeaseParams{OwnerID: b.owner, RunID: run, Expired: true}))(t); ok {
		t.Fatal("an unexpired lease was released as expired")
	}
	if ok := Must(s.ReleaseLease(b.ctx, &store.ReleaseLeaseParams{OwnerID: b.owner, RunID: run, Holder: "p2"}))(t); !ok {
		t.Fatal("the holder could not release its lease")
	}
	if ok := Must(s.ReleaseLease(b.ctx, &store.ReleaseLeaseParams{OwnerID: b.owner, RunID: run}))(t); ok {
		t.Fatal("a released lease was released again")
	}
	// A lease on a missing thread is refused; a lease rolls back with its
	// transaction.
	_, err = s.AcquireLease(b.ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: run, ThreadID: "missing-" + run, Holder: "p1", TTL: time.Minute})
	if err == nil {
		t.Fatal("a lease on a missing thread was accepted")
	}
	boom := errors.New("boom")
	err = s.Tx(b.ctx, func(tx store.Tx) error {
		Must(tx.AcquireLease(b.ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: run, ThreadID: th.ID, Holder: "p1", TTL: time.Minute}))(t)
		return boom
	})
	wantErr(t, err, boom)
	_, err = s.GetLease(b.ctx, &store.GetLeaseParams{OwnerID: b.owner, RunID: run})
	wantErr(t, err, store.ErrNotFound)
}

// testLeaseSweep: renewals extend only the holder's named runs, across
// owners; expired leases are found across owners, and an adopter's
// conditional release takes each once.
func testLeaseSweep(t *testing.T, s store.Store, b *bundle) {
	holder := "sweep-" + uuid.NewString()
	mine := newThread(t, s, b)
	theirs := Must(s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.other, Name: "thread", Network: "net"}))(t)
	runA, runB, runC := "run-a-"+uuid.NewString(), "run-b-"+uuid.NewString(), "run-c-"+uuid.NewString()
	short := 20 * time.Millisecond
	Must(s.AcquireLease(b.ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: runA, ThreadID: mine.ID, Holder: holder, TTL: short}))(t)
	Must(s.AcquireLease(b.ctx, &store.AcquireLeaseParams{OwnerID: b.other, RunID: runB, ThreadID: theirs.ID, Holder: holder, TTL: short}))(t)
	Must(s.AcquireLease(b.ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: runC, ThreadID: mine.ID, Holder: holder, TTL: short}))(t)
	// The holder still runs A and B (two owners); C is left to expire.
	if n := Must(s.RenewLeases(b.ctx, &store.RenewLeasesParams{Holder: holder, RunIDs: []string{runA, runB}, TTL: time.Minute}))(t); n != 2 {
		t.Fatalf("renewed %d leases, want 2", n)
	}
	if n := Must(s.RenewLeases(b.ctx, &store.RenewLeasesParams{Holder: "someone else", RunIDs: []string{runC}, TTL: time.Minute}))(t); n != 0 {
		t.Fatalf("another holder renewed %d leases", n)
	}
	time.Sleep(3 * short)
	expired := Must(s.ExpiredLeases(b.ctx, &store.ExpiredLeasesParams{Limit: 1000}))(t)
	found := map[string]*store.Lease{}
	for _, l := range expired {
		found[l.RunID] = l
		if !l.ExpiresAt.Before(time.Now()) {
			t.Errorf("lease of %s expires at %v, in the future", l.RunID, l.ExpiresAt)
		}
	}
	if found[runA] != nil || found[runB] != nil {
		t.Fatalf("renewed leases are reported expired")
	}
	c := found[runC]
	if c == nil || c.OwnerID != b.owner || c.ThreadID != mine.ID || c.Holder != holder {
		t.Fatalf("the expired lease of C is missing or wrong: %+v", c)
	}
	// Two adopters race for C: one wins.
	took := make([]bool, 4)
	for i, err := range race(len(took), func(i int) (err error) {
		took[i], err = s.ReleaseLease(b.ctx, &store.ReleaseLeaseParams{OwnerID: b.owner, RunID: runC, Expired: true})
		return err
	}) {
		if err != nil {
			t.Errorf("adopter %d: %v", i, err)
		}
	}
	if wins := countTrue(took); wins != 1 {
		t.Fatalf("%d adopters took the expired lease, want 1", wins)
	}
}
