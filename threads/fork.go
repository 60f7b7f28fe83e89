package threads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// written with the fork in one transaction. Forks of forks work alike. The
// fork's messages are copies with their own ids (message ids are unique).
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
		if len(p.msgs) == 0 {
			return nil, fmt.Errorf("%w: no message at the point", ErrForkEdit)
		}
		last := &p.msgs[len(p.msgs)-1]
		edited, err := edit(*last, opts.Edit)
		if err != nil {
			return nil, err
		}
		if p.state != nil {
			for _, ms := range [][]message.Message{p.state.Messages, p.state.Transcript} {
				for i := range ms {
					if ms[i].ID == last.ID {
						ms[i] = edited
					}
				}
			}
		}
		*last = edited
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

// forkPoint is a fork's point resolved: the messages the fork holds, its
// active agent and, for a run waiting for a decision, the fork's run state.
type forkPoint struct {
	kind, run, agent string
	msgs             []message.Message
	state            *runstate.State
}

// kept reports whether a stored message goes into a fork: not a message
// rolled back or still being written.
func kept(m *store.Message) bool {
	return m.Status == "" || m.Status == message.StatusCompleted
}

func (s *Service) forkPoint(ctx context.Context, owner string, src *store.Thread, msgs []*store.Message, at string) (*forkPoint, error) {
	cp, err := s.st.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: owner, ID: at})
	switch {
	case err == nil && cp.ThreadID == src.ID:
		return checkpointPoint(cp, msgs)
	case err == nil, errors.Is(err, store.ErrNotFound):
	default:
		return nil, fmt.Errorf("threads: fork at %s: %w", at, err)
	}
	p := &forkPoint{kind: "message"}
	for i, m := range msgs {
		if !kept(m) {
			continue
		}
		c := m.Message
		c.ID = ""
		p.msgs = append(p.msgs, c)
		if m.Agent != "" {
			p.agent = m.Agent
		}
		if m.ID != at {
			continue
		}
		p.run = runOfMessage(m.ID)
		if m.Role == message.RoleUser {
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
	return nil, ErrForkPoint
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
// cp holds it.
func checkpointPoint(cp *store.Checkpoint, msgs []*store.Message) (*forkPoint, error) {
	st := cp.State
	p := &forkPoint{kind: "checkpoint", run: cp.RunID, agent: st.Agent}
	first := runstate.MessageID(cp.RunID, 1)
	for _, m := range msgs {
		if m.ID == first {
			break
		}
		if kept(m) {
			c := m.Message
			c.ID = ""
			p.msgs = append(p.msgs, c)
		}
	}
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
