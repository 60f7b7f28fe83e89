package storetest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
)

// Hostile input: values PostgreSQL refuses (SQLSTATE classes 22 and 54)
// must be refused by every backend with ErrInvalid naming the field, and
// nothing written; the values next to them that PostgreSQL keeps must be
// kept by every backend.

// hostileTexts are strings no backend keeps: in an id (an HTTP path's %00,
// %FF), a name or free text.
var hostileTexts = map[string]string{
	"NUL":        "a\x00b",
	"OnlyNUL":    "\x00",
	"InvalidUTF": "caf\xe9",
	"LoneByte":   "\xff",
}

func testHostileText(t *testing.T, s store.Store, b *bundle) {
	ctx := b.ctx
	th := newThread(t, s, b)
	for name, v := range hostileTexts {
		calls := []struct {
			field string
			call  func() error
		}{
			{"ID", func() error { return errOf(s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: v})) }},
			{"Name", func() error { return errOf(s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: b.owner, Name: v})) }},
			{"ID", func() error { return errOf(s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: b.owner, ID: v})) }},
			{"Name", func() error { return errOf(s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: b.owner, Name: v})) }},
			{"ParentID", func() error {
				return errOf(s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: b.owner, ParentID: v}))
			}},
			{"Network", func() error {
				return errOf(s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: b.owner, Network: v}))
			}},
			{"ActiveAgent", func() error {
				return errOf(s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: b.owner, ActiveAgent: v}))
			}},
			{"OwnerID", func() error { return errOf(s.GetThread(ctx, &store.GetThreadParams{OwnerID: v, ID: th.ID})) }},
			{"ID", func() error { return errOf(s.GetThread(ctx, &store.GetThreadParams{OwnerID: b.owner, ID: v})) }},
			{"ParentID", func() error {
				return errOf(s.ListThreads(ctx, &store.ListThreadsParams{OwnerID: b.owner, ParentID: v}))
			}},
			{"Cursor", func() error { return errOf(s.ListThreads(ctx, &store.ListThreadsParams{OwnerID: b.owner, Cursor: v})) }},
			{"Namespace", func() error {
				return errOf(s.UpdateThreadMetadata(ctx, &store.UpdateThreadMetadataParams{OwnerID: b.owner, ThreadID: th.ID, Namespace: v, Patch: json.RawMessage(`1`)}))
			}},
			{"Agent", func() error {
				return errOf(s.SetActiveAgent(ctx, &store.SetActiveAgentParams{OwnerID: b.owner, ThreadID: th.ID, Agent: v}))
			}},
			{"ThreadID", func() error {
				return errOf(s.SetActiveAgent(ctx, &store.SetActiveAgentParams{OwnerID: b.owner, ThreadID: v, Agent: "a"}))
			}},
			{"ThreadID", func() error {
				return errOf(s.ListMessages(ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: v}))
			}},
			{"Messages[0].Agent", func() error {
				m := message.Assistant(v, "hi")
				return errOf(s.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID, Messages: []store.NewMessage{{Message: m}}}))
			}},
			{"Messages[1].ID", func() error {
				m := message.User("hi")
				m.ID = v
				return errOf(s.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
					Messages: []store.NewMessage{{Message: message.User("ok")}, {Message: m}}}))
			}},
			{"ID", func() error { return errOf(s.GetMessage(ctx, &store.GetMessageParams{OwnerID: b.owner, ID: v})) }},
			{"MessageID", func() error {
				return errOf(s.UpsertDraft(ctx, &store.UpsertDraftParams{OwnerID: b.owner, MessageID: v}))
			}},
			{"Text", func() error {
				return errOf(s.UpsertDraft(ctx, &store.UpsertDraftParams{OwnerID: b.owner, MessageID: uuid.NewString(), Text: v}))
			}},
			{"MessageID", func() error { return errOf(s.GetDraft(ctx, &store.GetDraftParams{OwnerID: b.owner, MessageID: v})) }},
			{"State.RunID", func() error {
				return errOf(s.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: newState(v, th.ID, 0)}))
			}},
			{"ID", func() error { return errOf(s.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: b.owner, ID: v})) }},
			{"RunID", func() error {
				return errOf(s.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: b.owner, RunID: v}))
			}},
			{"IdempotencyKey", func() error {
				return errOf(s.CreateJobRun(ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: v, Kind: "k"}))
			}},
			{"Kind", func() error {
				return errOf(s.CreateJobRun(ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: uuid.NewString(), Kind: v}))
			}},
			{"ID", func() error { return errOf(s.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: b.owner, ID: v})) }},
			{"Error", func() error {
				return errOf(s.TransitionJobRun(ctx, &store.TransitionJobRunParams{OwnerID: b.owner, ID: uuid.NewString(), To: store.JobError, Error: v}))
			}},
			{"HandoffID", func() error {
				return errOf(s.UpsertThreadSummary(ctx, &store.UpsertThreadSummaryParams{OwnerID: b.owner, HandoffID: v, Summary: json.RawMessage(`{}`)}))
			}},
			{"Markdown", func() error {
				return errOf(s.UpsertThreadSummary(ctx, &store.UpsertThreadSummaryParams{OwnerID: b.owner, HandoffID: uuid.NewString(), Summary: json.RawMessage(`{}`), Markdown: v}))
			}},
			{"AgentID", func() error {
				return errOf(s.GetMemoryDocument(ctx, &store.GetMemoryDocumentParams{OwnerID: b.owner, AgentID: v}))
			}},
			{"Content", func() error {
				return errOf(s.PutMemoryDocument(ctx, &store.PutMemoryDocumentParams{OwnerID: b.owner, AgentID: "a-" + uuid.NewString(), Content: v}))
			}},
			{"RunID", func() error {
				return errOf(s.AcquireLease(ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: v, Holder: "h", TTL: time.Minute}))
			}},
			{"Holder", func() error {
				return errOf(s.AcquireLease(ctx, &store.AcquireLeaseParams{OwnerID: b.owner, RunID: "r", Holder: v, TTL: time.Minute}))
			}},
			{"ID", func() error {
				return errOf(s.CreateInterrupt(ctx, newInterrupt(b, th, store.InterruptRun, v)))
			}},
			{"Agent", func() error {
				p := newInterrupt(b, th, store.InterruptRun, uuid.NewString())
				p.Agent = v
				return errOf(s.CreateInterrupt(ctx, p))
			}},
			{"ID", func() error { return errOf(s.GetInterrupt(ctx, &store.GetInterruptParams{OwnerID: b.owner, ID: v})) }},
			{"Name", func() error {
				return errOf(s.CreateAPIKey(ctx, &store.CreateAPIKeyParams{OwnerID: b.owner, Name: v, Secret: "baton_" + uuid.NewString()}))
			}},
		}
		for i, c := range calls {
			err := c.call()
			if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), c.field) {
				t.Errorf("%s: call %d (%s): error = %v, want ErrInvalid naming %s", name, i, c.field, err, c.field)
			}
		}
	}
	checkNothingHostile(t, s, b, th)
	// An id or key of MaxKeyBytes is kept; a longer one is refused.
	long := strings.Repeat("k", 1024)
	Must(s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: b.owner, ID: long}))(t)
	Must(s.GetThread(ctx, &store.GetThreadParams{OwnerID: b.owner, ID: long}))(t)
	for _, err := range []error{
		errOf(s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: b.owner, ID: long + "k"})),
		errOf(s.CreateJobRun(ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: strings.Repeat("€", 3000), Kind: "k"})),
		errOf(s.CreateInterrupt(ctx, newInterrupt(b, th, store.InterruptThreadHandoff, strings.Repeat("i", 4000)))),
	} {
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "more than the 1024") {
			t.Errorf("a key longer than 1024 bytes: error = %v, want ErrInvalid", err)
		}
	}
	// Long free text is kept.
	name := strings.Repeat("név ", 5000)
	if got := Must(s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: b.owner, Name: name}))(t); got.Name != name {
		t.Errorf("a long name came back as %d bytes", len(got.Name))
	}
}

// checkNothingHostile fails unless the owner's rows are the thread th, with
// no messages, and the other owner is untouched.
func checkNothingHostile(t *testing.T, s store.Store, b *bundle, th *store.Thread) {
	t.Helper()
	page := Must(s.ListThreads(b.ctx, &store.ListThreadsParams{OwnerID: b.owner}))(t)
	if len(page.Threads) != 1 || page.Threads[0].ID != th.ID {
		t.Errorf("threads after refused writes: %d", len(page.Threads))
	}
	if msgs := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t); len(msgs) != 0 {
		t.Errorf("messages after refused writes: %d", len(msgs))
	}
	if got := Must(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: th.ID}))(t); got.Version != th.Version || got.ActiveAgent != th.ActiveAgent {
		t.Errorf("thread changed by refused writes: %+v", got)
	}
}

// hostileJSON are JSON values PostgreSQL's jsonb refuses; keptJSON are
// their neighbours, which it keeps.
var (
	hostileJSON = map[string]string{
		"NULEscape":          `"a\u0000b"`,
		"NULKey":             `{"\u0000":1}`,
		"LoneHigh":           `"\ud800"`,
		"LoneHighThenText":   `"\ud800x"`,
		"LoneLow":            `["\udc00"]`,
		"TwoHighs":           `"\ud800\ud800"`,
		"SurrogateKey":       `{"\udfff":true}`,
		"InvalidUTF8":        "\"caf\xe9\"",
		"HugeNumber":         `1e131072`,
		"HugeExponent":       `[1e1000000000000]`,
		"TooManyDecimals":    `1e-16384`,
		"ZeroTooManyDecimal": `0.0e-16383`,
		"LongInteger":        `1` + strings.Repeat("0", 131072),
	}
	keptJSON = map[string]string{
		"Pair":          `"\ud83d\ude00 ☂ \u00e9"`,
		"EscapedQuote":  `"a\"\\u0000"`,
		"BigNumber":     `-9.99e131071`,
		"SmallNumber":   `1e-16383`,
		"ZeroExponent":  `0e999999`,
		"PlainNumbers":  `[0, -0, 1.5, 12345678901234567890123456789]`,
		"EmptyString":   `""`,
		"NestedObjects": `{"a":[{"b":null}]}`,
	}
)

func testHostileJSON(t *testing.T, s store.Store, b *bundle) {
	ctx := b.ctx
	th := newThread(t, s, b)
	writes := func(v json.RawMessage) []struct {
		field string
		call  func() error
	} {
		return []struct {
			field string
			call  func() error
		}{
			{"Metadata", func() error {
				return errOf(s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: b.owner, Metadata: map[string]json.RawMessage{"ns": v}}))
			}},
			{"Patch", func() error {
				return errOf(s.UpdateThreadMetadata(ctx, &store.UpdateThreadMetadataParams{OwnerID: b.owner, ThreadID: th.ID, Namespace: "ns", Patch: v}))
			}},
			{"Metadata", func() error {
				return errOf(s.CreateJobRun(ctx, &store.CreateJobRunParams{OwnerID: b.owner, IdempotencyKey: uuid.NewString(), Kind: "k",
					Metadata: map[string]json.RawMessage{"ns": v}}))
			}},
			{"Summary", func() error {
				return errOf(s.UpsertThreadSummary(ctx, &store.UpsertThreadSummaryParams{OwnerID: b.owner, HandoffID: uuid.NewString(),
					Summary: json.RawMessage(`{"title":` + string(v) + `}`)}))
			}},
			{"Payload", func() error {
				p := newInterrupt(b, th, store.InterruptRun, uuid.NewString())
				p.Payload = json.RawMessage(`{"args":` + string(v) + `}`)
				return errOf(s.CreateInterrupt(ctx, p))
			}},
			{"Outcome", func() error {
				p := Must(s.CreateInterrupt(ctx, newInterrupt(b, th, store.InterruptRun, uuid.NewString())))(t)
				return errOf(s.DecideInterrupt(ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: p.ID, Status: store.InterruptDecided,
					Decision: json.RawMessage(`{}`), Outcome: v}))
			}},
			{"Decision", func() error {
				p := Must(s.CreateInterrupt(ctx, newInterrupt(b, th, store.InterruptRun, uuid.NewString())))(t)
				return errOf(s.DecideInterrupt(ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: p.ID, Status: store.InterruptDecided,
					Decision: v, Outcome: json.RawMessage(`{}`)}))
			}},
		}
	}
	for name, v := range hostileJSON {
		for _, c := range writes(json.RawMessage(v)) {
			if err := c.call(); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), c.field) {
				t.Errorf("%s in %s: error = %v, want ErrInvalid naming %s", name, c.field, err, c.field)
			}
		}
	}
	page := Must(s.ListThreads(ctx, &store.ListThreadsParams{OwnerID: b.owner}))(t)
	if len(page.Threads) != 1 || len(page.Threads[0].Metadata) != 0 {
		t.Errorf("refused metadata written: %d threads, %v", len(page.Threads), page.Threads[0].Metadata)
	}
	for name, v := range keptJSON {
		for _, c := range writes(json.RawMessage(v)) {
			if err := c.call(); err != nil {
				t.Errorf("%s in %s: %v, want it kept", name, c.field, err)
			}
		}
	}
	// A kept value reads back as the same JSON value (PostgreSQL's jsonb
	// normalises escapes and numbers' spelling, not their value).
	v := json.RawMessage(keptJSON["Pair"])
	got := Must(s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: b.owner, Metadata: map[string]json.RawMessage{"ns": v}}))(t)
	got = Must(s.GetThread(ctx, &store.GetThreadParams{OwnerID: b.owner, ID: got.ID}))(t)
	if !jsonEqual(got.Metadata["ns"], v) {
		t.Errorf("metadata %s read back as %s", v, got.Metadata["ns"])
	}
}
