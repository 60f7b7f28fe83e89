package threads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// MetadataFork is the thread metadata namespace of a fork: the source
// thread, the point it was forked at, whether its last message was edited
// and, for a fork of a run waiting for a decision, the fork's own run.
const MetadataFork = "fork"

// ForkEdit replaces the last message at a fork's point: a user or assistant
// message's text, or a tool message's result.
type ForkEdit struct {
	// Text is the message's new text (a tool result's output).
	Text string `json:"text"`
	// IsError, for a tool result, marks it an error.
	IsError bool `json:"is_error,omitempty"`
}

// ForkOptions are the options of [Service.Fork].
type ForkOptions struct {
	// Edit, when set, replaces the last message at the point.
	Edit *ForkEdit
	// Name names the fork. Defaults to "Fork of " and the source's name.
	Name string
}

// ForkInfo is the value of a fork's metadata namespace [MetadataFork].
type ForkInfo struct {
	SourceThreadID string `json:"source_thread_id"`
	// At is the point as given: a checkpoint or a message id; Kind says
	// which ("checkpoint", "message").
	At   string `json:"at"`
	Kind string `json:"kind"`
	// SourceRunID is the run of the point, when known.
	SourceRunID string `json:"source_run_id,omitempty"`
	Edited      bool   `json:"edited,omitempty"`
	// RunID is the fork's own run, waiting for its decision, when the point
	// waited for one.
	RunID string `json:"run_id,omitempty"`
}

// ErrForkPoint is returned (wrapped, with store.ErrNotFound) for a point
// that is neither a checkpoint nor a message of the thread.
var ErrForkPoint = fmt.Errorf("threads: fork point not found: %w", store.ErrNotFound)

// ErrForkEdit is returned (wrapped, with store.ErrInvalid) for an edit that
// does not apply to the last message at the point.
var ErrForkEdit = fmt.Errorf("threads: edit does not apply: %w", store.ErrInvalid)

// Fork creates a thread of owner holding the history of owner's thread
// threadID up to a point — at, a checkpoint of one of its runs or one of its
// messages — with the active agent of that point, and with its last message
// replaced when opts.Edit is set. The fork's ParentID is the source, its
// metadata [MetadataFork] names the source and the point. The source is
// unchanged. A run on the fork continues from there like on any thread.
//
// A checkpoint where a run waited for a decision gives a fork whose own run
// waits for its own decision: a copy of the run's state under a new run id,
// its messages rows of the fork, and a pending interrupt of its own, all
// written with the fork in one transaction. Forks of forks work alike.
//
// The fork shares the source's stored messages instead of copying them
// (store.CreateThreadParams.ForkOf): it reads the source's rows, ids
// included, up to the first that is not kept, rolled back or of the
// source's latest run (which a rollback may still change); what it holds
// after them — those rows' kept successors, the run's transcript at a
// checkpoint, the edited last message — are rows of its own with new ids.
func (s *Service) Fork(ctx context.Context, owner, threadID, at string, opts ForkOptions) (*store.Thread, error) {
	src, err := s.st.GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: threadID})
	if err != nil {
		return nil, fmt.Errorf("threads: fork of %s: %w", threadID, err)
	}
	if at == "" {
		return nil, ErrForkPoint
	}
	msgs, err := s.st.ListMessages(ctx, &store.ListMessagesParams{OwnerID: owner, ThreadID: src.ID})
	if err != nil {
		return nil, fmt.Errorf("threads: fork of %s: %w", threadID, err)
	}
	p, err := s.forkPoint(ctx, owner, src, msgs, at)
	if err != nil {
		return nil, err
	}
	if opts.Edit != nil {
		err := p.last(msgs, func(last message.Message) (message.Message, error) {
			edited, err := edit(last, opts.Edit)
			if err != nil || p.state == nil {
				return edited, err
			}
			for _, ms := range [][]message.Message{p.state.Messages, p.state.Transcript} {
				for i := range ms {
					if ms[i].ID == last.ID {
						ms[i] = edited
					}
				}
			}
			return edited, nil
		})
		if err != nil {
			return nil, err
		}
	}
	info := ForkInfo{SourceThreadID: src.ID, At: at, Kind: p.kind, SourceRunID: p.run, Edited: opts.Edit != nil}
	if p.state != nil {
		info.RunID = p.state.RunID
	}
	meta, _ := json.Marshal(info)
	name := opts.Name
	if name == "" {
		name = strings.TrimSpace(Title("Fork of " + src.Name))
	}
	create := &store.CreateThreadParams{OwnerID: owner, ParentID: src.ID, Name: name, Network: src.Network, ActiveAgent: p.agent,
		Metadata: map[string]json.RawMessage{MetadataFork: meta}}
	if p.shared > 0 {
		create.ForkOf, create.ForkSeq = src.ID, p.shared
	}
	for _, m := range p.msgs {
		create.Messages = append(create.Messages, store.NewMessage{Message: m})
	}
	var th *store.Thread
	err = s.st.Tx(ctx, func(tx store.Tx) error {
		var err error
		if th, err = tx.CreateThread(ctx, create); err != nil {
			return err
		}
		if p.state == nil {
			return nil
		}
		st := p.state
		st.ThreadID = th.ID
		if _, err := tx.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: owner, State: st}); err != nil {
			return err
		}
		payload, err := json.Marshal(st.Interrupt)
		if err != nil {
			return err
		}
		_, err = tx.CreateInterrupt(ctx, &store.CreateInterruptParams{OwnerID: owner, ID: st.Interrupt.ID, Kind: store.InterruptRun,
			ThreadID: th.ID, RunID: st.RunID, Network: st.Network, Agent: st.Agent, Payload: payload})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("threads: fork of %s at %s: %w", threadID, at, err)
	}
	return th, nil
}

// forkPoint is a fork's point resolved: the source's position up to which
// the fork reads the source's stored messages, the messages the fork holds
// after them (its own rows), its active agent and, for a run waiting for a
// decision, the fork's run state.
type forkPoint struct {
	kind, run, agent string
	shared           int64
	msgs             []message.Message
	state            *runstate.State
}

// kept reports whether a stored message goes into a fork: not a message
// rolled back or still being written.
func kept(m *store.Message) bool {
	return m.Status == "" || m.Status == message.StatusCompleted
}

// history sets p's history to the kept messages of msgs: the fork reads
// the source's rows up to the first that is not kept (a rollback, a
// placeholder, an error: the source's list shows them, the fork's left
// them out) or that is of unsettled, the source's latest run (a rollback
// may still mark its rows); the kept rows after that are copies.
func (p *forkPoint) history(msgs []*store.Message, unsettled string) {
	sharing := true
	for _, m := range msgs {
		if unsettled != "" && strings.HasPrefix(m.ID, unsettled+"-") || !kept(m) {
			sharing = false
		}
		if !kept(m) {
			continue
		}
		if sharing {
			p.shared = m.Seq
			continue
		}
		c := m.Message
		c.ID = ""
		p.msgs = append(p.msgs, c)
	}
}

// last returns the last message at p and sets it to edited: a row of the
// fork's own instead of the source's when it was shared.
func (p *forkPoint) last(msgs []*store.Message, edited func(message.Message) (message.Message, error)) error {
	if len(p.msgs) == 0 {
		// The last shared row: the fork reads the source up to the row
		// before it.
		i := slices.IndexFunc(msgs, func(m *store.Message) bool { return m.Seq == p.shared })
		if i < 0 {
			return fmt.Errorf("%w: no message at the point", ErrForkEdit)
		}
		m := msgs[i].Message
		m.ID = ""
		p.msgs = []message.Message{m}
		p.shared = 0
		if i > 0 {
			p.shared = msgs[i-1].Seq
		}
	}
	e, err := edited(p.msgs[len(p.msgs)-1])
	if err != nil {
		return err
	}
	p.msgs[len(p.msgs)-1] = e
	return nil
}

func (s *Service) forkPoint(ctx context.Context, owner string, src *store.Thread, msgs []*store.Message, at string) (*forkPoint, error) {
	unsettled := ""
	latest, err := s.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, ThreadID: src.ID, NoState: true})
	switch {
	case err == nil:
		unsettled = latest.RunID
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrIncompatible):
	default:
		return nil, fmt.Errorf("threads: fork of %s: %w", src.ID, err)
	}
	cp, err := s.st.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: owner, ID: at})
	switch {
	case err == nil && cp.ThreadID == src.ID:
		return checkpointPoint(cp, msgs, unsettled)
	case err == nil, errors.Is(err, store.ErrNotFound):
	default:
		return nil, fmt.Errorf("threads: fork at %s: %w", at, err)
	}
	i := slices.IndexFunc(msgs, func(m *store.Message) bool { return m.ID == at && kept(m) })
	if i < 0 {
		return nil, ErrForkPoint
	}
	p := &forkPoint{kind: "message", run: runOfMessage(at)}
	p.history(msgs[:i+1], unsettled)
	for _, m := range msgs[:i+1] {
		if kept(m) && m.Agent != "" {
			p.agent = m.Agent
		}
	}
	if msgs[i].Role == message.RoleUser {
		// The agent that took the message: the one that answered it.
		for _, n := range msgs[i+1:] {
			if n.Role == message.RoleAssistant && n.Agent != "" {
				p.agent = n.Agent
				break
			}
		}
	}
	return p, nil
}

// runOfMessage returns the run of a message id made by runstate.MessageID.
func runOfMessage(id string) string {
	i := strings.LastIndex(id, "-m")
	if i <= 0 {
		return ""
	}
	return id[:i]
}

// checkpointPoint is the point of checkpoint cp of a thread with messages
// msgs: the thread's messages before cp's run, then the run's transcript as
// cp holds it (the fork's own rows). unsettled is the thread's latest run.
func checkpointPoint(cp *store.Checkpoint, msgs []*store.Message, unsettled string) (*forkPoint, error) {
	st := cp.State
	p := &forkPoint{kind: "checkpoint", run: cp.RunID, agent: st.Agent}
	first := runstate.MessageID(cp.RunID, 1)
	end := slices.IndexFunc(msgs, func(m *store.Message) bool { return m.ID == first })
	if end < 0 {
		end = len(msgs)
	}
	p.history(msgs[:end], unsettled)
	if st.Status != runstate.StatusInterrupted || st.Interrupt == nil {
		for _, m := range st.Transcript {
			m.ID = ""
			p.msgs = append(p.msgs, m)
		}
		return p, nil
	}
	// The fork's own run, waiting for its own decision: the state under a
	// new run id, its transcript rows of the fork with the ids of that run.
	b, err := runstate.Encode(st)
	if err != nil {
		return nil, fmt.Errorf("threads: fork at %s: %w", cp.ID, err)
	}
	fs, err := runstate.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("threads: fork at %s: %w", cp.ID, err)
	}
	run := runstate.NewRunID()
	rename := func(id string) string {
		if rest, ok := strings.CutPrefix(id, cp.RunID+"-"); ok {
			return run + "-" + rest
		}
		return id
	}
	fs.RunID = run
	for _, ms := range [][]message.Message{fs.Messages, fs.Transcript} {
		for i := range ms {
			ms[i].ID = rename(ms[i].ID)
		}
	}
	fs.Interrupt.ID = rename(fs.Interrupt.ID)
	p.msgs = append(p.msgs, fs.Transcript...)
	p.state = fs
	return p, nil
}

// edit returns m with its text, or its tool result, replaced by e.
func edit(m message.Message, e *ForkEdit) (message.Message, error) {
	parts := make([]message.Part, 0, len(m.Parts))
	switch m.Role {
	case message.RoleUser, message.RoleAssistant:
		if e.IsError {
			return m, fmt.Errorf("%w: is_error is for a tool result", ErrForkEdit)
		}
		for _, p := range m.Parts {
			if p.Type != message.PartText {
				parts = append(parts, p)
			}
		}
		if e.Text != "" {
			parts = append([]message.Part{{Type: message.PartText, Text: e.Text}}, parts...)
		}
		if len(parts) == 0 {
			return m, fmt.Errorf("%w: the message would be empty", ErrForkEdit)
		}
	case message.RoleTool:
		results := 0
		for _, p := range m.Parts {
			if p.Type == message.PartToolResult {
				p.Text, p.IsError = e.Text, e.IsError
				results++
			}
			parts = append(parts, p)
		}
		if results != 1 {
			return m, fmt.Errorf("%w: the tool message has %d results, not one", ErrForkEdit, results)
		}
	default:
		return m, fmt.Errorf("%w: a %s message cannot be edited", ErrForkEdit, m.Role)
	}
	m.Parts = parts
	return m, nil
}
