// Package scripted is a deterministic [model.Model] that replays a declared
// script per agent: text, tool calls with JSON arguments, optional `when`
// regular expressions on the last user message, simulated token streaming,
// usage and injected errors. Examples, tests and the offline demo use it.
//
// The script position is derived from the history, not kept in the model:
// every answer is stamped with its step index (metadata key "scripted_step"),
// and the next call continues after the last stamped answer of the same
// agent. One Model therefore serves any number of concurrent runs.
package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/retry"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
)

// MetaStep is the metadata key that stamps an answer with its script step.
const MetaStep = "scripted_step"

// Call is a scripted tool call.
type Call struct {
	// ID defaults to "call_<agent>_<step>_<index>".
	ID        string
	Name      string
	Arguments json.RawMessage
}

// Fail makes a step fail with a model error, Times times before it answers
// (0 means always).
type Fail struct {
	Status     int
	Message    string
	Transient  bool
	RetryAfter time.Duration
	Times      int
}

// Step is one answer of the script.
type Step struct {
	// When, if set, must match the last user message for the step to be used;
	// steps that do not match are skipped over.
	When *regexp.Regexp
	Text string
	// Texts are further text blocks of the answer, after Text, each its own
	// text part (a recorded answer of several blocks replays as such).
	Texts     []string
	ToolCalls []Call
	// Reasoning, if set, streams first as reasoning and is kept as a
	// reasoning part (Provider "scripted").
	Reasoning string
	// FinishReason replaces the finish reason ("stop", or "tool_calls" when
	// the step has calls), to replay how a provider's answer ended:
	// "length", "content_filter", "refusal", "pause_turn" …
	FinishReason string
	// Refusal is the provider's words on a refusal or content-filter stop
	// ([model.Chunk.Refusal]).
	Refusal string
	// Usage defaults to an estimate of 1 token per 4 bytes.
	Usage *message.Usage
	// Delay is waited before the answer starts (simulated latency).
	Delay time.Duration
	Fail  *Fail
}

// Options tune streaming. The zero Options stream each text in one delta.
type Options struct {
	// ChunkWords splits text into deltas of this many words.
	ChunkWords int
	// ChunkDelay is waited between deltas.
	ChunkDelay time.Duration
}

// Model replays one agent's script. It is safe for concurrent use.
type Model struct {
	agent string
	steps []Step
	opts  Options

	mu       sync.Mutex
	failures map[int]int // step -> failures served, for Fail.Times
}

// New returns a scripted model for agent.
func New(agent string, steps []Step, opts Options) *Model {
	return &Model{agent: agent, steps: steps, opts: opts, failures: map[int]int{}}
}

// Steps returns the script.
func (m *Model) Steps() []Step { return m.steps }

// ScriptError says the script cannot answer.
type ScriptError struct {
	Agent  string
	Step   int // first step considered (0-based)
	Reason string
}

func (e *ScriptError) Error() string {
	return fmt.Sprintf("scripted model: agent %s, step %d: %s", e.Agent, e.Step+1, e.Reason)
}

// next finds the step to play for req.
func (m *Model) next(req *model.Request) (int, error) {
	start := 0
	for i := len(req.Messages) - 1; i >= 0; i-- {
		msg := &req.Messages[i]
		if msg.Role != message.RoleAssistant || msg.Agent != m.agent {
			continue
		}
		if n, ok := stepOf(msg.Metadata[MetaStep]); ok {
			start = n + 1
			break
		}
	}
	if start >= len(m.steps) {
		return 0, &ScriptError{Agent: m.agent, Step: start, Reason: fmt.Sprintf("script exhausted (%d steps)", len(m.steps))}
	}
	last := lastUser(req.Messages)
	for i := start; i < len(m.steps); i++ {
		if w := m.steps[i].When; w == nil || w.MatchString(last) {
			return i, nil
		}
	}
	return 0, &ScriptError{Agent: m.agent, Step: start, Reason: fmt.Sprintf("no step from here on matches the last user message %q", clip(last, 80))}
}

func stepOf(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case float64:
		return int(n), true
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	case string:
		i, err := strconv.Atoi(n)
		return i, err == nil
	}
	return 0, false
}

func lastUser(msgs []message.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == message.RoleUser {
			return msgs[i].Text()
		}
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Stream implements [model.Model].
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		i, err := m.next(req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		st := &m.steps[i]
		if st.Delay > 0 {
			if err := retry.Sleep(ctx, st.Delay); err != nil {
				yield(model.Chunk{}, err)
				return
			}
		}
		if err := ctx.Err(); err != nil {
			yield(model.Chunk{}, err)
			return
		}
		if f := st.Fail; f != nil && m.shouldFail(i, f) {
			msg := f.Message
			if msg == "" {
				msg = "scripted failure"
			}
			yield(model.Chunk{}, &model.Error{Provider: "scripted", StatusCode: f.Status, Message: msg, Transient: f.Transient, RetryAfter: f.RetryAfter})
			return
		}
		out := &message.Message{Role: message.RoleAssistant, Agent: m.agent, Metadata: map[string]any{MetaStep: i}}
		if st.Reasoning != "" {
			if !yield(model.Chunk{Type: model.ChunkReasoning, Text: st.Reasoning}, nil) {
				return
			}
			out.Parts = append(out.Parts, message.Part{Type: message.PartReasoning, Text: st.Reasoning, Provider: "scripted"})
		}
		if st.Text != "" {
			if !m.streamText(ctx, st.Text, yield) {
				return
			}
			out.Parts = append(out.Parts, message.Part{Type: message.PartText, Text: st.Text})
		}
		for _, t := range st.Texts {
			if t == "" {
				continue
			}
			if !m.streamText(ctx, t, yield) {
				return
			}
			out.Parts = append(out.Parts, message.Part{Type: message.PartText, Text: t})
		}
		for j, c := range st.ToolCalls {
			id := c.ID
			if id == "" {
				id = "call_" + m.agent + "_" + strconv.Itoa(i+1) + "_" + strconv.Itoa(j+1)
			}
			args := c.Arguments
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			out.Parts = append(out.Parts, message.Part{Type: message.PartToolCall, CallID: id, Name: c.Name, Arguments: args})
			if !yield(model.Chunk{Type: model.ChunkToolCall, ToolCall: &message.ToolCall{ID: id, Name: c.Name, Arguments: args}}, nil) {
				return
			}
		}
		usage := estimate(req, st)
		out.Usage = &usage
		finish := model.FinishStop
		if len(st.ToolCalls) > 0 {
			finish = model.FinishToolCalls
		}
		if st.FinishReason != "" {
			finish = st.FinishReason
		}
		yield(model.Chunk{Type: model.ChunkDone, Message: out, Usage: usage, FinishReason: finish, Refusal: st.Refusal,
			RequestID: "scripted-" + m.agent + "-" + strconv.Itoa(i+1), Model: "scripted"}, nil)
	}
}

func (m *Model) shouldFail(step int, f *Fail) bool {
	if f.Times <= 0 {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failures[step] < f.Times {
		m.failures[step]++
		return true
	}
	return false
}

func (m *Model) streamText(ctx context.Context, text string, yield func(model.Chunk, error) bool) bool {
	if m.opts.ChunkWords <= 0 {
		return yield(model.Chunk{Type: model.ChunkText, Text: text}, nil)
	}
	words := strings.SplitAfter(text, " ")
	for k := 0; k < len(words); k += m.opts.ChunkWords {
		if k > 0 && m.opts.ChunkDelay > 0 {
			if err := retry.Sleep(ctx, m.opts.ChunkDelay); err != nil {
				yield(model.Chunk{}, err)
				return false
			}
		}
		end := min(k+m.opts.ChunkWords, len(words))
		if !yield(model.Chunk{Type: model.ChunkText, Text: strings.Join(words[k:end], "")}, nil) {
			return false
		}
	}
	return true
}

// estimate is the deterministic usage of a step: its declared usage, or one
// token per 4 bytes of the system prompt and history (input) and of the answer.
func estimate(req *model.Request, st *Step) message.Usage {
	if st.Usage != nil {
		return *st.Usage
	}
	in := len(req.System)
	for i := range req.Messages {
		for j := range req.Messages[i].Parts {
			p := &req.Messages[i].Parts[j]
			in += len(p.Text) + len(p.Arguments)
		}
	}
	out := len(st.Text) + len(st.Reasoning)
	for _, t := range st.Texts {
		out += len(t)
	}
	for _, c := range st.ToolCalls {
		out += len(c.Name) + len(c.Arguments)
	}
	return message.Usage{InputTokens: int64(in/4 + 1), OutputTokens: int64(out/4 + 1)}
}
