package netspec

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
)

// model builds the model of agentName from s.
func (l *loader) model(path, agentName string, s *ModelSpec) model.Model {
	var m model.Model
	ok := false
	switch s.Model {
	case "":
		l.bad(path, "model is required (scripted, openai:<model>, openai-responses:<model>, anthropic:<model>, openai-compatible:<model>)")
		return nil
	case "scripted":
		m, ok = l.scriptedModel(path, agentName, s)
	default:
		m, ok = l.providerModel(path, s)
	}
	if !ok {
		return nil
	}
	if l.opts.WrapModel != nil {
		m = l.opts.WrapModel(agentName, m)
	}
	return m
}

// scriptedModel builds the scripted model of agentName from s: its script,
// its rules and its reply; ok is false when s cannot make one.
func (l *loader) scriptedModel(path, agentName string, s *ModelSpec) (m model.Model, ok bool) {
	if s.BaseURL != "" {
		l.bad(field(path, "base_url"), "base_url is for provider models, not scripted")
	}
	if s.APIKeyEnv != "" {
		l.bad(field(path, "api_key_env"), "api_key_env is for provider models, not scripted")
	}
	if s.Stream != nil && s.Stream.ChunkWords < 0 {
		l.bad(field(field(path, "stream"), "chunk_words"), "chunk_words must not be negative")
	}
	if len(s.Script) == 0 && len(s.Rules) == 0 && s.Reply == "" {
		l.bad(path, "a scripted model needs a script: of steps, rules: or a reply:")
		return nil, false
	}
	steps := l.steps(field(path, "script"), s.Script)
	var o scripted.Options
	if s.Stream != nil {
		o = scripted.Options{ChunkWords: s.Stream.ChunkWords, ChunkDelay: time.Duration(s.Stream.Delay)}
	}
	o.Reply = s.Reply
	for i, r := range s.Rules {
		rp := at(field(path, "rules"), i)
		first := r.StepSpec
		first.When = ""
		rule := scripted.Rule{Steps: []scripted.Step{l.step(rp, first)}}
		if r.When != "" {
			rule.When = l.regexp(field(rp, "when"), r.When)
		}
		for j, t := range r.Then {
			if t.When != "" {
				l.bad(field(at(field(rp, "then"), j), "when"), "a rule's then: steps answer the same turn; only the rule has a when:")
			}
		}
		rule.Steps = append(rule.Steps, l.steps(field(rp, "then"), r.Then)...)
		o.Rules = append(o.Rules, rule)
	}
	return scripted.New(agentName, steps, o), true
}

// providerModel builds the provider model s names (PROVIDER:MODEL) through
// the options' Provider; ok is false when it cannot.
func (l *loader) providerModel(path string, s *ModelSpec) (m model.Model, ok bool) {
	if len(s.Script) > 0 {
		l.bad(field(path, "script"), "script: is only for model: scripted")
	}
	if len(s.Rules) > 0 || s.Reply != "" {
		l.bad(field(path, "rules"), "rules: and reply: are only for model: scripted")
	}
	if s.Stream != nil {
		l.bad(field(path, "stream"), "stream: simulates streaming for model: scripted; provider models stream for real")
	}
	prefix, name, ok := strings.Cut(s.Model, ":")
	switch {
	case !ok || name == "":
		l.bad(field(path, "model"), "model %q: want scripted or PROVIDER:MODEL", s.Model)
		return nil, false
	case prefix != "openai" && prefix != "openai-responses" && prefix != "anthropic" && prefix != "openai-compatible":
		l.bad(field(path, "model"), "unknown provider %q (want openai, openai-responses, anthropic or openai-compatible)", prefix)
		return nil, false
	case prefix == "openai-compatible" && s.BaseURL == "":
		l.bad(field(path, "model"), "openai-compatible models need base_url")
		return nil, false
	case l.opts.Provider == nil:
		l.bad(field(path, "model"), "model %q: no provider is configured in this program", s.Model)
		return nil, false
	}
	pm, err := l.opts.Provider(ProviderSpec{Model: s.Model, BaseURL: s.BaseURL, APIKeyEnv: s.APIKeyEnv, HTTPClient: l.opts.HTTPClient})
	if err != nil {
		l.bad(field(path, "model"), "%v", err)
		return nil, false
	}
	return pm, true
}

func (l *loader) steps(path string, in []StepSpec) []scripted.Step {
	out := make([]scripted.Step, 0, len(in))
	for i, s := range in {
		out = append(out, l.step(at(path, i), s))
	}
	return out
}

// step returns the scripted step of s, at path sp.
func (l *loader) step(sp string, s StepSpec) scripted.Step {
	st := scripted.Step{Text: s.Text, Texts: s.Texts, Reasoning: s.Reasoning, FinishReason: s.FinishReason, Refusal: s.Refusal, Delay: time.Duration(s.Delay)}
	if s.When != "" {
		st.When = l.regexp(field(sp, "when"), s.When)
	}
	if s.Text == "" && len(s.Texts) == 0 && len(s.ToolCalls) == 0 && s.Fail == nil && s.FinishReason == "" {
		l.bad(sp, "a script step needs text:, tool_calls: or fail: (or texts:, or finish_reason:)")
	}
	switch s.FinishReason {
	case "", model.FinishStop, model.FinishToolCalls, model.FinishLength, model.FinishContentFilter, model.FinishRefusal, model.FinishPauseTurn:
	default:
		l.bad(field(sp, "finish_reason"), "unknown finish_reason %q (want length, content_filter, refusal or pause_turn)", s.FinishReason)
	}
	for j, c := range s.ToolCalls {
		if c.Name == "" {
			l.bad(at(field(sp, "tool_calls"), j), "a tool call needs a name")
			continue
		}
		args := json.RawMessage(`{}`)
		if c.Arguments != nil {
			b, err := marshalJSON(c.Arguments)
			if err != nil {
				l.bad(at(field(sp, "tool_calls"), j), "arguments are not JSON-compatible: %v", err)
				continue
			}
			args = b
		}
		st.ToolCalls = append(st.ToolCalls, scripted.Call{ID: c.ID, Name: c.Name, Arguments: args})
	}
	if u := s.Usage; u != nil && (u.InputTokens < 0 || u.OutputTokens < 0 || u.CachedTokens < 0 || u.CacheCreationTokens < 0 || u.ReasoningTokens < 0) {
		l.bad(field(sp, "usage"), "usage token counts must not be negative")
	}
	if f := s.Fail; f != nil && f.Times < 0 {
		l.bad(field(field(sp, "fail"), "times"), "fail times must not be negative (0 means always)")
	}
	if s.Usage != nil {
		u := s.Usage
		st.Usage = &message.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedTokens: u.CachedTokens,
			CacheCreationTokens: u.CacheCreationTokens, ReasoningTokens: u.ReasoningTokens}
	}
	if f := s.Fail; f != nil {
		st.Fail = &scripted.Fail{Status: f.Status, Message: f.Message, Transient: f.Transient, RetryAfter: time.Duration(f.RetryAfter), Times: f.Times}
	}
	return st
}
