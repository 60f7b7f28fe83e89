package openai

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"

	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/openai/internal/oai"
)

// knobs are the fields of a request that shape the models' settings
// besides those both APIs share: the output limit, stop sequences,
// reasoning effort, and Chat's best-effort sampling fields.
type knobs struct {
	maxTokens           *int
	stop                []string
	effort              string
	seed                *int64
	presence, frequency *float64
	logitBias           map[string]float64
	// verbosity is Chat's verbosity or the Responses API's text.verbosity
	// (verbosityParam names it).
	verbosity, verbosityParam string
}

// runOptions checks the fields both APIs share and k, and returns the run
// options that honour them: they reach every model of the network
// (runner.WithSettings), and each provider passes on what it takes —
// OpenAI takes seed, the penalties, logit_bias and verbosity as best effort itself,
// so a provider without them (Anthropic, OpenAI's Responses API) leaves
// them out. A field baton cannot honour is refused.
func runOptions(q *oai.OpenAIRequest, k knobs) ([]runner.RunOption, error) {
	if err := refuseUnsupported(q); err != nil {
		return nil, err
	}
	st, err := settings(q, k)
	if err != nil {
		return nil, err
	}
	if reflect.ValueOf(st).IsZero() {
		return nil, nil
	}
	return []runner.RunOption{runner.WithSettings(st)}, nil
}

// refuseUnsupported refuses the shared fields that baton cannot honour.
// store is accepted either way: baton keeps every conversation as a
// thread (the threads API deletes it) and never asks a provider to store
// one.
func refuseUnsupported(q *oai.OpenAIRequest) error {
	if len(q.Tools) > 0 {
		return unsupported("tools", "client-side tools are not supported: a network's agents call the tools declared in its file; send the request without tools")
	}
	if len(q.ToolChoice) > 0 {
		var tc string
		if json.Unmarshal(q.ToolChoice, &tc) != nil || (tc != "none" && tc != "auto") {
			return unsupported("tool_choice", "tool_choice must be \"auto\" or \"none\": a network's agents call the tools declared in its file")
		}
	}
	if q.ServiceTier != "" && q.ServiceTier != "auto" && q.ServiceTier != "default" {
		return unsupported("service_tier", "service_tier %q is not supported: leave it out or send \"auto\"", q.ServiceTier)
	}
	if q.TopLogprobs != nil && *q.TopLogprobs > 0 {
		return unsupported("top_logprobs", "log probabilities are not available from a network")
	}
	return nil
}

// settings are the model settings of the request's fields, checked.
func settings(q *oai.OpenAIRequest, k knobs) (model.Settings, error) {
	var st model.Settings
	if err := sampling(q, k, &st); err != nil {
		return st, err
	}
	if err := bestEffort(q, k, &st); err != nil {
		return st, err
	}
	return st, nil
}

// sampling sets st's sampling and output settings: temperature, top_p,
// the output token limit, stop sequences and reasoning effort.
func sampling(q *oai.OpenAIRequest, k knobs, st *model.Settings) error {
	if q.Temperature != nil {
		if *q.Temperature < 0 || *q.Temperature > 2 {
			return server.BadParam("temperature", "temperature must be between 0 and 2")
		}
		st.Temperature = q.Temperature
	}
	if q.TopP != nil {
		if *q.TopP < 0 || *q.TopP > 1 {
			return server.BadParam("top_p", "top_p must be between 0 and 1")
		}
		st.TopP = q.TopP
	}
	if k.maxTokens != nil {
		if *k.maxTokens < 1 {
			return server.BadParam("max_tokens", "the output token limit must be at least 1")
		}
		st.MaxTokens = *k.maxTokens
	}
	if len(k.stop) > 4 {
		return server.BadParam("stop", "at most 4 stop sequences")
	}
	for _, s := range k.stop {
		if s == "" {
			return server.BadParam("stop", "a stop sequence must not be empty")
		}
	}
	st.Stop = k.stop
	switch k.effort {
	case "", "minimal", "low", "medium", "high":
		st.ReasoningEffort = k.effort
	default:
		return server.BadParam("reasoning_effort", "reasoning effort %q: want minimal, low, medium or high", k.effort)
	}
	return nil
}

// bestEffort sets the settings OpenAI takes as best effort (parallel tool
// calls, seed, penalties, logit bias, the end user, the prompt cache key,
// verbosity),
// which each provider passes on where it has them.
func bestEffort(q *oai.OpenAIRequest, k knobs, st *model.Settings) error {
	// A network's agents may call tools at once unless the request says
	// they may not.
	st.ParallelToolCalls = q.ParallelToolCalls
	st.Seed = k.seed
	for _, p := range []struct {
		name string
		v    *float64
	}{{"presence_penalty", k.presence}, {"frequency_penalty", k.frequency}} {
		if p.v != nil && (*p.v < -2 || *p.v > 2) {
			return server.BadParam(p.name, "%s must be between -2 and 2", p.name)
		}
	}
	if k.presence != nil && *k.presence != 0 {
		st.PresencePenalty = k.presence
	}
	if k.frequency != nil && *k.frequency != 0 {
		st.FrequencyPenalty = k.frequency
	}
	if len(k.logitBias) > 300 {
		return server.BadParam("logit_bias", "at most 300 tokens in logit_bias")
	}
	for tok, b := range k.logitBias {
		if _, err := strconv.ParseUint(tok, 10, 32); err != nil {
			return server.BadParam("logit_bias", "logit_bias keys are token ids: %q is not one", tok)
		}
		if b < -100 || b > 100 || b != math.Trunc(b) {
			return server.BadParam("logit_bias", "logit_bias of token %s must be an integer between -100 and 100", tok)
		}
		if st.LogitBias == nil {
			st.LogitBias = make(map[string]int, len(k.logitBias))
		}
		st.LogitBias[tok] = int(b)
	}
	user := q.SafetyIdentifier
	if user == "" {
		user = q.User
	}
	if len(user) > 256 {
		return server.BadParam("user", "user must be at most 256 characters")
	}
	st.User = user
	if len(q.PromptCacheKey) > 256 {
		return server.BadParam("prompt_cache_key", "prompt_cache_key must be at most 256 characters")
	}
	st.PromptCacheKey = q.PromptCacheKey
	switch k.verbosity {
	case "", "low", "medium", "high":
		st.Verbosity = k.verbosity
	default:
		return server.BadParam(k.verbosityParam, "%s %q: want low, medium or high", k.verbosityParam, k.verbosity)
	}
	return nil
}
