package threadhandoff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/retry"
	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/summary"
)

// Config configures a [Service]. Only Store is required (and Model for
// [Service.Preview]); every other zero field means its default. A Config
// must not be changed after [New].
type Config struct {
	// Store keeps the threads, their messages and metadata, and — unless
	// Memory is set — the agents' memory documents.
	Store store.Store
	// Memory keeps the agents' memory documents. Defaults to the Store's
	// own ([StoreMemory]); then an approval and a cleanup are each one
	// transaction. With another store (a [memory.Dir] for --memory-dir) the
	// memory write is a separate atomic step, ordered so that retrying a
	// failed call completes it (see [Service.Decide]).
	Memory memory.Store
	// Model is the summary model. Required by Preview.
	Model model.Model
	// Summarise holds the defaults of the summary call (Agent,
	// Instructions, Settings, Select, Budget, MaxTokens, MaxChars,
	// MaxAttempts). Its identity fields (HandoffID, ThreadID) are ignored.
	Summarise summary.Options
	// Network is the network of the runs whose first agent
	// [Service.Picker] chooses: the assistant of a pending handoff is
	// picked only when Network has it (else the next picker decides). Nil
	// means no check: the assistant is picked, and a runner whose network
	// lacks it fails the turn.
	Network *agent.Network

	// Mirror receives every accepted summary (an upsert into
	// thread_summaries, unique by owner and handoff id). By default (nil)
	// the summary is written into the Store's thread_summaries in the
	// decision's transaction, so that it commits, or not, with the
	// approval, whatever happens to the process after. Set it to another
	// store (the PostgreSQL one) to mirror there after the approval has
	// committed, with retries: when that fails, the handoff completes
	// anyway and "handoff_store_status" is logged as "degraded"; a later
	// handoff of the same process retries it (a crash loses the retry; the
	// summary stays in the parent's last_handoff metadata).
	Mirror MirrorTarget
	// NoMirror disables the mirror.
	NoMirror bool
	// EventTx, if set, is called in the transaction that stores a
	// proposal (TypeProposed) or decides it (TypeDecided), with the event's
	// data: package webhook's thread_handoff events.
	EventTx func(ctx context.Context, tx store.Tx, owner string, ev *Event) error
	// MirrorRetry bounds the tries of one upsert into a separate Mirror.
	// Defaults to 3
	// attempts, 100ms base delay, 2s cap.
	MirrorRetry RetryPolicy
	// MirrorTimeout bounds one mirror attempt. Defaults to 2 seconds.
	MirrorTimeout time.Duration
	// MirrorMinInterval is the storm guard: the same handoff is not
	// mirrored again within it (repeated approvals, retries by clients).
	// Defaults to 1 second.
	MirrorMinInterval time.Duration

	// StrictMemory makes a malformed memory document an error (a
	// *memory.ParseError) instead of repairing it with [memory.Repair]
	// (which only escapes stray markers; the repair is logged).
	StrictMemory bool

	// Logger defaults to slog.Default(). Now defaults to time.Now. Sleep
	// replaces retry waits, for tests.
	Logger *slog.Logger
	Now    func() time.Time
	Sleep  func(ctx context.Context, d time.Duration) error
}

// RetryPolicy configures retries: exponential backoff with jitter. The zero
// value means the caller's defaults.
type RetryPolicy struct {
	MaxAttempts int
	BaseDelay   time.Duration
	MaxDelay    time.Duration
}

// MirrorTarget receives accepted summaries. [store.Store] implements it.
type MirrorTarget interface {
	UpsertThreadSummary(ctx context.Context, params *store.UpsertThreadSummaryParams) (*store.ThreadSummary, error)
}

// Service runs thread → thread handoffs on a store: [Service.Preview],
// [Service.Decide], [Service.SystemText] and [Service.Cleanup], and, for
// the runner, [Service.Extension] and [Service.Picker]. It is safe for
// concurrent use, and several processes may share the store.
type Service struct {
	cfg        Config
	mem        memory.Store
	memInStore bool
	log        *slog.Logger
	now        func() time.Time
	mirror     *mirror
	// mirrorInTx: the summary is mirrored into the Store in the
	// decision's transaction (Config.Mirror nil, NoMirror false).
	mirrorInTx bool
}

// New returns a service for cfg. It fails when cfg.Store is nil.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("threadhandoff: Config.Store is required")
	}
	s := &Service{cfg: cfg, mem: cfg.Memory, log: cfg.Logger, now: cfg.Now}
	if s.mem == nil {
		s.mem, s.memInStore = StoreMemory(cfg.Store), true
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	switch {
	case cfg.NoMirror:
	case cfg.Mirror == nil:
		s.mirrorInTx = true
	default:
		s.mirror = newMirror(cfg.Mirror, cfg, s.log, s.now)
	}
	return s, nil
}

// Memory returns the memory store the service uses.
func (s *Service) Memory() memory.Store { return s.mem }

// PreviewParams are the params of [Service.Preview].
type PreviewParams struct {
	Owner    string
	ThreadID string
	// AssistantID is the agent whose memory will receive the summary.
	// Defaults to the thread's active agent.
	AssistantID string
	// HandoffID defaults to a new id.
	HandoffID string
}

// Preview summarises the last messages of a thread ([summary.Summarise]
// with the configured model and defaults) and returns the proposal it
// makes, with [Proposal.Interrupt] as its payload. It writes nothing:
// [Service.Propose] stores the proposal for a decision. A thread of another
// owner is store.ErrNotFound; a thread without a user message
// [summary.ErrNothingToSummarise]; output that is no valid summary a
// *[summary.InvalidSummaryError].
func (s *Service) Preview(ctx context.Context, p *PreviewParams) (*Proposal, error) {
	_, prop, err := s.preview(ctx, p)
	return prop, err
}

// preview is Preview, which also returns the thread.
func (s *Service) preview(ctx context.Context, p *PreviewParams) (*store.Thread, *Proposal, error) {
	if s.cfg.Model == nil {
		return nil, nil, errors.New("threadhandoff: Config.Model is required to preview a handoff")
	}
	th, err := s.cfg.Store.GetThread(ctx, &store.GetThreadParams{OwnerID: p.Owner, ID: p.ThreadID})
	if err != nil {
		return nil, nil, fmt.Errorf("thread handoff preview of thread %s: %w", p.ThreadID, err)
	}
	assistant := p.AssistantID
	if assistant == "" {
		assistant = th.ActiveAgent
	}
	if assistant == "" {
		return nil, nil, fmt.Errorf("thread handoff preview of thread %s: the thread has no active agent: name the assistant", p.ThreadID)
	}
	o := s.cfg.Summarise
	window := o.Select.Window
	if window <= 0 {
		window = summary.DefaultWindow
	}
	stored, err := s.cfg.Store.ListMessages(ctx, &store.ListMessagesParams{OwnerID: p.Owner, ThreadID: p.ThreadID, Limit: window, Last: true})
	if err != nil {
		return nil, nil, fmt.Errorf("thread handoff preview of thread %s: %w", p.ThreadID, err)
	}
	msgs := make([]message.Message, len(stored))
	var through int64
	for i, m := range stored {
		msgs[i] = m.Message
		through = max(through, m.Seq)
	}
	o.HandoffID, o.ThreadID = p.HandoffID, p.ThreadID
	if o.Logger == nil {
		o.Logger = s.log
	}
	if o.Now == nil {
		o.Now = s.now
	}
	if o.Sleep == nil {
		o.Sleep = s.cfg.Sleep
	}
	r, err := summary.Summarise(ctx, s.cfg.Model, msgs, o)
	if err != nil {
		return nil, nil, err
	}
	prop := newProposal(r, p.Owner, assistant, p.ThreadID)
	prop.ThroughSeq = through
	return th, prop, nil
}

// Mirror statuses of an [Outcome], logged as handoff_store_status.
const (
	MirrorOK       = "ok"
	MirrorDegraded = "degraded"
	MirrorSkipped  = "skipped" // the storm guard: mirrored moments ago
	MirrorDisabled = "disabled"
)

// Outcome is the result of [Service.Decide], recorded with the decided
// proposal (its JSON is the interrupt's outcome).
type Outcome struct {
	// InterruptID is the stored proposal decided; HandoffID is the same id.
	InterruptID string       `json:"interrupt_id"`
	HandoffID   string       `json:"handoff_id"`
	Decision    DecisionType `json:"decision,omitempty"`
	// Applied is true when the handoff is in effect (approve or edit).
	Applied bool `json:"applied"`
	// AlreadyApplied reports that an earlier Decide applied this handoff;
	// this call wrote nothing new and describes that handoff.
	AlreadyApplied bool   `json:"already_applied,omitempty"`
	ParentThreadID string `json:"parent_thread_id"`
	// ChildThreadID is the new thread: surfaces switch to it.
	ChildThreadID string `json:"child_thread_id,omitempty"`
	AssistantID   string `json:"assistant_id"`
	// Summary and Markdown are what was written, edits included.
	Summary   summary.Summary `json:"summary_json"`
	Markdown  string          `json:"summary_md"`
	Edited    bool            `json:"edited,omitempty"`
	Truncated bool            `json:"truncated,omitempty"`
	// MemoryRepairs are the markers escaped in a malformed memory document.
	MemoryRepairs []memory.Fix `json:"-"`
	// MirrorStatus is MirrorOK, MirrorDegraded, MirrorSkipped or
	// MirrorDisabled; "" for a rejection.
	MirrorStatus string `json:"mirror_status,omitempty"`
	// SupersededBy, for a proposal superseded before anyone decided it, is
	// the newer proposal.
	SupersededBy string `json:"superseded_by,omitempty"`
	// Message says what happened, for people.
	Message string `json:"message"`
	// LastSeq is the seq of the thread's last message when the proposal
	// was decided (0: unknown, or superseded): thread streams place the
	// decision's event after it.
	LastSeq int64 `json:"last_seq,omitempty"`

	owner string
}

// approval is what Decide writes.
type approval struct {
	p         *Proposal
	summary   summary.Summary
	md        string
	edited    bool
	truncated bool
	at        time.Time
}

// approveTx writes the threads (and the memory, when mem is not nil) of an
// approval in tx, or describes the approval already made.
func (s *Service) approveTx(ctx context.Context, tx store.Tx, mem memory.Store, a *approval) (*Outcome, error) {
	p := a.p
	parent, err := tx.GetThread(ctx, &store.GetThreadParams{OwnerID: p.Owner, ID: p.ParentThreadID})
	if err != nil {
		return nil, fmt.Errorf("parent thread: %w", err)
	}
	if lh := LastHandoffOf(parent); lh != nil && lh.HandoffID == p.HandoffID {
		return &Outcome{owner: p.Owner, HandoffID: p.HandoffID, Applied: true, AlreadyApplied: true, ParentThreadID: parent.ID,
			ChildThreadID: lh.ChildThreadID, AssistantID: lh.AssistantID, Summary: lh.Summary, Markdown: lh.Markdown, Edited: lh.Edited}, nil
	}
	// Locks are taken in one order everywhere (parent, child, memory) so
	// that concurrent approvals and cleanups never deadlock: the parent is
	// updated first, before the child's foreign key share-locks it.
	childID := summary.NewID()
	h := &Handoff{HandoffID: p.HandoffID, SourceThreadID: parent.ID, ChildThreadID: childID, AssistantID: p.AssistantID,
		Pending: true, CleanupRequired: true, ApprovedAt: a.at}
	th, err := tx.UpdateThreadMetadata(ctx, &store.UpdateThreadMetadataParams{OwnerID: p.Owner, ThreadID: parent.ID,
		Namespace: store.MetadataThreadHandoff, Patch: handoffPatch(h), ExpectedVersion: parent.Version})
	if err != nil {
		return nil, fmt.Errorf("parent thread metadata: %w", err)
	}
	lh := &LastHandoff{HandoffID: p.HandoffID, ChildThreadID: childID, AssistantID: p.AssistantID, Title: a.summary.Title,
		Summary: a.summary, Markdown: a.md, Edited: a.edited, ModelRunID: p.ModelRunID, TokensUsed: p.TokensUsed, ApprovedAt: a.at}
	if _, err := tx.UpdateThreadMetadata(ctx, &store.UpdateThreadMetadataParams{OwnerID: p.Owner, ThreadID: parent.ID,
		Namespace: MetadataLastHandoff, Patch: mustJSON(lh), ExpectedVersion: th.Version}); err != nil {
		return nil, fmt.Errorf("parent thread metadata: %w", err)
	}
	if _, err := tx.CreateThread(ctx, &store.CreateThreadParams{
		OwnerID: p.Owner, ID: childID, ParentID: parent.ID, Name: a.summary.Title, Network: parent.Network,
		ActiveAgent: p.AssistantID, Metadata: map[string]json.RawMessage{store.MetadataThreadHandoff: mustJSON(h)},
	}); err != nil {
		return nil, fmt.Errorf("create child thread: %w", err)
	}
	out := &Outcome{owner: p.Owner, HandoffID: p.HandoffID, Applied: true, ParentThreadID: parent.ID, ChildThreadID: childID,
		AssistantID: p.AssistantID, Summary: a.summary, Markdown: a.md, Edited: a.edited}
	if mem != nil {
		if err := s.seed(ctx, mem, p.Owner, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// seedSeparateMemory writes the memory of an approval whose threads are
// committed, when the memory is not in the store. For an approval made
// before, it writes only while the child still waits for its cleanup, so
// that a repeated Decide never seeds a summary that was already cleared.
func (s *Service) seedSeparateMemory(ctx context.Context, out *Outcome) error {
	if out.AlreadyApplied {
		child, err := s.cfg.Store.GetThread(ctx, &store.GetThreadParams{OwnerID: out.owner, ID: out.ChildThreadID})
		if err != nil {
			return fmt.Errorf("child thread: %w", err)
		}
		if h := HandoffOf(child); h == nil || h.HandoffID != out.HandoffID || !h.CleanupRequired {
			return nil
		}
	}
	return s.seed(ctx, s.mem, out.owner, out)
}

// seed writes out's summary into the memory block of out.AssistantID, as
// the seed of its child thread: the seeds of other handoffs stay, and a
// block that holds no seed (the placeholder) is replaced.
func (s *Service) seed(ctx context.Context, mem memory.Store, owner string, out *Outcome) error {
	sd := seed{header: header{HandoffID: out.HandoffID, ChildThreadID: out.ChildThreadID, ParentThreadID: out.ParentThreadID}, markdown: out.Markdown}
	_, _, err := memory.Update(ctx, mem, owner, out.AssistantID, 0, func(doc string) (string, bool, error) {
		doc, fixes, err := s.wellFormed(doc)
		if err != nil {
			return "", false, err
		}
		out.MemoryRepairs = fixes
		var seeds []seed
		if b, _ := memory.Parse(doc); b != nil {
			seeds = parseSeeds(b.Content)
		}
		next, err := memory.Set(doc, renderSeeds(append(withoutHandoff(seeds, sd.HandoffID, sd.ChildThreadID), sd)))
		return next, err == nil, err
	})
	if err != nil {
		return fmt.Errorf("memory of agent %s: %w", out.AssistantID, err)
	}
	return nil
}

// wellFormed returns doc repaired, or a parse error in strict mode.
func (s *Service) wellFormed(doc string) (string, []memory.Fix, error) {
	if _, err := memory.Parse(doc); err == nil {
		return doc, nil, nil
	} else if s.cfg.StrictMemory {
		return "", nil, err
	}
	fixed, fixes := memory.Repair(doc)
	return fixed, fixes, nil
}

// withTx runs fn in a transaction, again when it fails with a conflict
// (another writer changed a thread or the memory document since it was
// read), up to 8 times with a short random pause.
func (s *Service) withTx(ctx context.Context, fn func(tx store.Tx) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = s.cfg.Store.Tx(ctx, fn)
		if err == nil || !errors.Is(err, store.ErrConflict) || attempt == 8 {
			return err
		}
		d := time.Duration(1+rand.IntN(5*attempt)) * time.Millisecond
		if s.cfg.Sleep != nil {
			err = s.cfg.Sleep(ctx, d)
		} else {
			err = retry.Sleep(ctx, d)
		}
		if err != nil {
			return err
		}
	}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("threadhandoff: encode %T: %v", v, err))
	}
	return b
}
