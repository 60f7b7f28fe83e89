package runner

import (
	"encoding/json"
	"maps"

	"github.com/batonhq/baton/model"
)

// SettingsValue is the key of the run's values (runstate.State.Values)
// under which [WithSettings] keeps a run's settings, so that the run keeps
// them when it is resumed, in any process.
const SettingsValue = "baton.settings"

// WithSettings overrides the model settings of every agent for this run
// (and its resumes): each field set in s replaces the agent's, except
// MaxTokens, which lowers the agent's (the lower of both), and Stop, which
// adds to the agent's. An OpenAI-compatible request's max_tokens, stop,
// temperature and top_p reach the models this way.
func WithSettings(s model.Settings) RunOption {
	return func(o *runOpts) { o.settings = &s }
}

// runValues returns the run's values with its settings, if any.
func (o *runOpts) runValues() map[string]json.RawMessage {
	if o.settings == nil {
		return o.values
	}
	b, err := json.Marshal(o.settings)
	if err != nil {
		return o.values
	}
	v := make(map[string]json.RawMessage, len(o.values)+1)
	maps.Copy(v, o.values)
	v[SettingsValue] = b
	return v
}

// runSettings returns an agent's settings with the run's (values) over
// them.
func runSettings(s model.Settings, values map[string]json.RawMessage) model.Settings {
	raw, ok := values[SettingsValue]
	if !ok {
		return s
	}
	var o model.Settings
	if json.Unmarshal(raw, &o) != nil {
		return s
	}
	if o.Temperature != nil {
		s.Temperature = o.Temperature
	}
	if o.TopP != nil {
		s.TopP = o.TopP
	}
	if o.MaxTokens > 0 && (s.MaxTokens == 0 || o.MaxTokens < s.MaxTokens) {
		s.MaxTokens = o.MaxTokens
	}
	if len(o.Stop) > 0 {
		s.Stop = append(append([]string(nil), s.Stop...), o.Stop...)
	}
	if o.ToolChoice != "" {
		s.ToolChoice = o.ToolChoice
	}
	if o.ParallelToolCalls != nil {
		s.ParallelToolCalls = o.ParallelToolCalls
	}
	if o.ReasoningEffort != "" {
		s.ReasoningEffort = o.ReasoningEffort
	}
	if o.Seed != nil {
		s.Seed = o.Seed
	}
	if o.PresencePenalty != nil {
		s.PresencePenalty = o.PresencePenalty
	}
	if o.FrequencyPenalty != nil {
		s.FrequencyPenalty = o.FrequencyPenalty
	}
	if len(o.LogitBias) > 0 {
		s.LogitBias = o.LogitBias
	}
	if o.User != "" {
		s.User = o.User
	}
	if o.PromptCacheKey != "" {
		s.PromptCacheKey = o.PromptCacheKey
	}
	if o.Verbosity != "" {
		s.Verbosity = o.Verbosity
	}
	return s
}
