// Package scripted is a deterministic [model.Model] that replays a declared
// script per agent: text, tool calls with JSON arguments, optional `when`
// regular expressions on the last user message, simulated token streaming,
// usage and injected errors. Examples, tests and the offline demo use it.
//
// The script position is derived from the history, not kept in the model:
// every answer is stamped with its step index (metadata key "scripted_step"),
// and the next call continues after the last stamped answer of the same
// agent. One Model therefore serves any number of concurrent runs.
//
// A script is played once per thread. For a free conversation, rules answer
// whatever the user says as often as it comes up (a rule is chosen by the
// user's words, each turn anew, once the script has no step for the turn),
// and a default reply answers everything else: a network whose agents have
// a reply never ends a turn with "script exhausted".
//
// Requests' settings are honoured as a provider would: MaxTokens cuts the
// answer (finish reason "length", one token per 4 bytes) and Stop ends it
// before the first stop sequence.
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
	"unicode/utf8"

	"github.com/batonhq/baton/internal/retry"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
)

// MetaStep is the metadata key that stamps an answer with its script step.
const MetaStep = "scripted_step"

// MetaRule is the metadata key that stamps an answer given by a rule or the
// default reply: "<rule>.<step>" (both 0-based), or "reply".
const MetaRule = "scripted_rule"

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

// Rule answers the user's words whenever they match, as often as they come
// up: once the script has no step left for a turn (it is played, or none of
// its remaining steps matches), the first rule whose When matches the last
// user message answers. Steps are the rule's answers within that turn: the
// first answers the message, each next one the next call of the same turn
// (after the results of the previous step's tool calls). A turn that calls
// the agent again after the rule's last step gets the default reply.
type Rule struct {
	// When must match the last user message; nil matches any.
	When  *regexp.Regexp
	Steps []Step
}

// Options tune the model. The zero Options stream each text in one delta
// and end a conversation with the script.
type Options struct {
	// ChunkWords splits text into deltas of this many words.
	ChunkWords int
	// ChunkDelay is waited between deltas.
	ChunkDelay time.Duration
	// Rules answer the user's words once the script has no step for a turn.
	Rules []Rule
	// Reply, if set, answers whatever neither the script nor a rule does:
	// the default reply that keeps a free conversation going.
	Reply string
}

// Model replays one agent's script. It is safe for concurrent use.
type Model struct {
	agent string
	steps []Step
	opts  Options
	reply Step

	mu       sync.Mutex
	failures map[string]int // answer's stamp -> failures served, for Fail.Times
}

// New returns a scripted model for agent.
func New(agent string, steps []Step, opts Options) *Model {
	return &Model{agent: agent, steps: steps, opts: opts, reply: Step{Text: opts.Reply}, failures: map[string]int{}}
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

// play is the answer chosen for a request: a script step (rule < 0), a
// rule's step, or the default reply (rule == replyRule).
type play struct {
	step *Step
	// index is the script step, or the rule's step.
	index int
	rule  int
	// turn is the number of user messages of the request: a rule's calls
	// are numbered with it, so that they differ from turn to turn.
	turn int
}

const (
	scriptRule = -1
	replyRule  = -2
)

// stamp is the metadata that marks the answer of p.
func (p play) stamp() map[string]any {
	switch p.rule {
	case scriptRule:
		return map[string]any{MetaStep: p.index}
	case replyRule:
		return map[string]any{MetaRule: "reply"}
	}
	return map[string]any{MetaRule: strconv.Itoa(p.rule) + "." + strconv.Itoa(p.index)}
}

// next finds the answer to play for req: the next step of a rule this turn
// is in, else the script's next step that matches, else the first rule that
// matches, else the default reply.
func (m *Model) next(req *model.Request) (play, error) {
	p, err := m.choose(req)
	for i := range req.Messages {
		if req.Messages[i].Role == message.RoleUser {
			p.turn++
		}
	}
	return p, err
}

func (m *Model) choose(req *model.Request) (play, error) {
	turn := lastUserIndex(req.Messages)
	start := 0
	for i := len(req.Messages) - 1; i >= 0; i-- {
		msg := &req.Messages[i]
		if msg.Role != message.RoleAssistant || msg.Agent != m.agent {
			continue
		}
		if i > turn {
			if r, ok := msg.Metadata[MetaRule]; ok {
				// This turn is a rule's (or the reply's): its next step, or
				// the reply.
				if rule, step, ok := ruleOf(r); ok && rule < len(m.opts.Rules) && step+1 < len(m.opts.Rules[rule].Steps) {
					return play{step: &m.opts.Rules[rule].Steps[step+1], index: step + 1, rule: rule}, nil
				}
				return m.replyOr(&ScriptError{Agent: m.agent, Step: len(m.steps), Reason: "the rule answering this turn has no further step, and there is no reply"})
			}
		}
		if n, ok := stepOf(msg.Metadata[MetaStep]); ok {
			start = n + 1
			break
		}
	}
	last := ""
	if turn >= 0 {
		last = req.Messages[turn].Text()
	}
	for i := start; i < len(m.steps); i++ {
		if w := m.steps[i].When; w == nil || w.MatchString(last) {
			return play{step: &m.steps[i], index: i, rule: scriptRule}, nil
		}
	}
	for k := range m.opts.Rules {
		r := &m.opts.Rules[k]
		if len(r.Steps) > 0 && (r.When == nil || r.When.MatchString(last)) {
			return play{step: &r.Steps[0], rule: k}, nil
		}
	}
	if start >= len(m.steps) {
		return m.replyOr(&ScriptError{Agent: m.agent, Step: start, Reason: fmt.Sprintf("script exhausted (%d steps)", len(m.steps))})
	}
	return m.replyOr(&ScriptError{Agent: m.agent, Step: start, Reason: fmt.Sprintf("no step from here on matches the last user message %q", clip(last, 80))})
}

// replyOr plays the default reply, or fails with err when there is none.
func (m *Model) replyOr(err *ScriptError) (play, error) {
	if m.opts.Reply == "" {
		return play{}, err
	}
	return play{step: &m.reply, rule: replyRule}, nil
}

// ruleOf parses a MetaRule stamp "<rule>.<step>".
func ruleOf(v any) (rule, step int, ok bool) {
	s, _ := v.(string)
	a, b, found := strings.Cut(s, ".")
	if !found {
		return 0, 0, false
	}
	r, err1 := strconv.Atoi(a)
	st, err2 := strconv.Atoi(b)
	return r, st, err1 == nil && err2 == nil && r >= 0 && st >= 0
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

// lastUserIndex returns the index of the last user message, -1 if none.
func lastUserIndex(msgs []message.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == message.RoleUser {
			return i
		}
	}
	return -1
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
		p, err := m.next(req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		st := p.step
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
		stamp := p.stamp()
		if f := st.Fail; f != nil && m.shouldFail(fmt.Sprint(stamp), f) {
			msg := f.Message
			if msg == "" {
				msg = "scripted failure"
			}
			yield(model.Chunk{}, &model.Error{Provider: "scripted", StatusCode: f.Status, Message: msg, Transient: f.Transient, RetryAfter: f.RetryAfter})
			return
		}
		texts := make([]string, 0, 1+len(st.Texts))
		for _, t := range append([]string{st.Text}, st.Texts...) {
			if t != "" {
				texts = append(texts, t)
			}
		}
		calls := st.ToolCalls
		finish := model.FinishStop
		if len(calls) > 0 {
			finish = model.FinishToolCalls
		}
		if st.FinishReason != "" {
			finish = st.FinishReason
		}
		if cut, reason := limit(texts, st.Reasoning, req.Settings); reason != "" {
			texts, calls, finish = cut, nil, reason
		}
		out := &message.Message{Role: message.RoleAssistant, Agent: m.agent, Metadata: stamp}
		if st.Reasoning != "" {
			if !yield(model.Chunk{Type: model.ChunkReasoning, Text: st.Reasoning}, nil) {
				return
			}
			out.Parts = append(out.Parts, message.Part{Type: message.PartReasoning, Text: st.Reasoning, Provider: "scripted"})
		}
		for _, t := range texts {
			if !m.streamText(ctx, t, yield) {
				return
			}
			out.Parts = append(out.Parts, message.Part{Type: message.PartText, Text: t})
		}
		for j, c := range calls {
			id := c.ID
			if id == "" {
				id = "call_" + m.agent + "_" + p.callPrefix() + strconv.Itoa(j+1)
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
		usage := estimate(req, st, texts, calls)
		out.Usage = &usage
		yield(model.Chunk{Type: model.ChunkDone, Message: out, Usage: usage, FinishReason: finish, Refusal: st.Refusal,
			RequestID: "scripted-" + m.agent + "-" + p.requestSuffix(), Model: "scripted"}, nil)
	}
}

// callPrefix is the part of a generated call id that names the answer:
// "<step>_" for the script's step (1-based), "t<turn>r<rule>.<step>_" for
// a rule's (a rule answers again in later turns) and "reply_".
func (p play) callPrefix() string {
	switch p.rule {
	case scriptRule:
		return strconv.Itoa(p.index+1) + "_"
	case replyRule:
		return "reply_"
	}
	return "t" + strconv.Itoa(p.turn) + "r" + strconv.Itoa(p.rule+1) + "." + strconv.Itoa(p.index+1) + "_"
}

// requestSuffix ends the request id of the answer: the script step
// (1-based), "r<rule>.<step>" or "reply".
func (p play) requestSuffix() string {
	return strings.TrimSuffix(p.callPrefix(), "_")
}

// limit applies a request's MaxTokens and Stop to an answer's texts, as a
// provider would: the texts up to the first stop sequence ("stop"), or up
// to MaxTokens tokens of one per 4 bytes, reasoning included ("length").
// The reason is "" when the answer is whole; a cut answer has no tool calls.
func limit(texts []string, reasoning string, s model.Settings) ([]string, string) {
	for i, t := range texts {
		cut := -1
		for _, stop := range s.Stop {
			if k := strings.Index(t, stop); stop != "" && k >= 0 && (cut < 0 || k < cut) {
				cut = k
			}
		}
		if cut >= 0 {
			out := append(texts[:i:i], t[:cut])
			if cut == 0 {
				out = out[:i]
			}
			if capped, reason := limit(out, reasoning, model.Settings{MaxTokens: s.MaxTokens}); reason != "" {
				return capped, reason
			}
			return out, model.FinishStop
		}
	}
	if s.MaxTokens <= 0 {
		return texts, ""
	}
	budget := s.MaxTokens*4 - len(reasoning)
	for i, t := range texts {
		if len(t) > budget {
			n := max(budget, 0)
			for n > 0 && !utf8.RuneStart(t[n]) {
				n--
			}
			out := texts[:i:i]
			if n > 0 {
				out = append(out, t[:n])
			}
			return out, model.FinishLength
		}
		budget -= len(t)
	}
	return texts, ""
}

func (m *Model) shouldFail(key string, f *Fail) bool {
	if f.Times <= 0 {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failures[key] < f.Times {
		m.failures[key]++
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

// estimate is the deterministic usage of an answer: its step's declared
// usage, or one token per 4 bytes of the system prompt and history (input)
// and of the answer given: reasoning, texts and calls (output).
func estimate(req *model.Request, st *Step, texts []string, calls []Call) message.Usage {
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
	out := len(st.Reasoning)
	for _, t := range texts {
		out += len(t)
	}
	for _, c := range calls {
		out += len(c.Name) + len(c.Arguments)
	}
	return message.Usage{InputTokens: int64(in/4 + 1), OutputTokens: int64(out/4 + 1)}
}
