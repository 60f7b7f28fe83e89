package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
)

// Model returns m answering for agentName from the session of the call's
// context: the recorded answer when the agent is unchanged and the run
// follows the recording, else m's answer (recorded in the session, which
// checks that the run still follows the recording). Without a session in
// the context it is m. It fits service.LoadOptions.WrapModel.
func Model(agentName string, m model.Model) model.Model {
	return model.Func(func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
		s, ok := FromContext(ctx)
		if !ok {
			return m.Stream(ctx, req)
		}
		if mc, ok := s.take(agentName); ok {
			return replayed(&mc.Message)
		}
		return live(ctx, s, agentName, m, req)
	})
}

// replayed streams a recorded answer as a model would: its text and
// reasoning, its calls, and the whole message with its usage.
func replayed(rec *message.Message) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		m := *rec
		m.Parts = slices.Clone(rec.Parts)
		m.Metadata = maps.Clone(rec.Metadata)
		calls := false
		for _, p := range m.Parts {
			var c model.Chunk
			switch p.Type {
			case message.PartText:
				c = model.Chunk{Type: model.ChunkText, Text: p.Text}
			case message.PartReasoning:
				c = model.Chunk{Type: model.ChunkReasoning, Text: p.Text}
			case message.PartToolCall:
				calls = true
				c = model.Chunk{Type: model.ChunkToolCall, ToolCall: &message.ToolCall{ID: p.CallID, Name: p.Name, Arguments: p.Arguments}}
			default:
				continue
			}
			if !yield(c, nil) {
				return
			}
		}
		finish := m.FinishReason
		if finish == "" {
			finish = model.FinishStop
			if calls {
				finish = model.FinishToolCalls
			}
		}
		var usage message.Usage
		if m.Usage != nil {
			usage = *m.Usage
		}
		yield(model.Chunk{Type: model.ChunkDone, Message: &m, Usage: usage, FinishReason: finish, RequestID: m.RequestID}, nil)
	}
}

// live streams m's answer and records it in s.
func live(ctx context.Context, s *Session, agentName string, m model.Model, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		start := time.Now()
		for c, err := range m.Stream(ctx, req) {
			if err == nil && c.Type == model.ChunkDone && c.Message != nil {
				msg := *c.Message
				if msg.Usage == nil && !c.Usage.IsZero() {
					u := c.Usage
					msg.Usage = &u
				}
				s.observe(agentName, &msg, time.Since(start).Milliseconds())
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

// ToolFunc is a tool's function (agent.Tool.Func).
type ToolFunc = func(ctx context.Context, args json.RawMessage) (string, error)

// UnmatchedError is the result of a tool call that has no recorded result
// when live tools are off: the model sees it as the call's error.
type UnmatchedError struct {
	Tool string
}

// Error is what the model sees as the call's result.
func (e *UnmatchedError) Error() string {
	return fmt.Sprintf("baton eval: the recording has no result for this call of %s (its arguments differ, or it was not made); it was not run (--live-tools runs such calls)", e.Tool)
}

// Tool returns fn answering for the tool from the session of the call's
// context: a call whose name and arguments (as JSON values) are those of
// a recorded call not yet answered gets its recorded result, and fn does
// not run; another is reported (Session.Unmatched) and answered with an
// *UnmatchedError, or by fn when the session has LiveTools. Without a
// session it is fn. It fits service.LoadOptions.WrapTool.
func Tool(name string, fn ToolFunc) ToolFunc {
	return func(ctx context.Context, args json.RawMessage) (string, error) {
		s, ok := FromContext(ctx)
		if !ok {
			return fn(ctx, args)
		}
		var agentName, callID string
		if ci, ok := agent.CallFromContext(ctx); ok {
			agentName, callID = ci.Agent, ci.CallID
		}
		if r, ok := s.result(agentName, name, callID, args); ok {
			if r.IsError {
				// The runner shows a tool's error as "error: " + its text.
				return "", errors.New(strings.TrimPrefix(r.Output, "error: "))
			}
			return r.Output, nil
		}
		if s.cfg.LiveTools {
			return fn(ctx, args)
		}
		return "", &UnmatchedError{Tool: name}
	}
}
