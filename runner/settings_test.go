package runner_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/runner"
)

// A run's settings reach every model call over the agent's, and stay with
// the run's state for its resumes.
func TestWithSettings(t *testing.T) {
	t.Parallel()
	a, rec := ag("a", text("hello there"))
	temp := 0.2
	a.Settings = model.Settings{MaxTokens: 100, Stop: []string{"END"}, Temperature: &temp}
	r, err := runner.New(runner.Config{Network: network(t, agent.Limits{}, a)})
	if err != nil {
		t.Fatal(err)
	}
	top := 0.5
	res, err := r.Run(t.Context(), "hi", runner.WithValues(map[string]json.RawMessage{"k": json.RawMessage(`1`)}),
		runner.WithSettings(model.Settings{MaxTokens: 7, Stop: []string{"\n\n"}, TopP: &top}))
	if err != nil {
		t.Fatal(err)
	}
	got := rec.last(t).Settings
	if got.MaxTokens != 7 || !slices.Equal(got.Stop, []string{"END", "\n\n"}) || got.Temperature == nil || *got.Temperature != 0.2 || got.TopP == nil || *got.TopP != 0.5 {
		t.Errorf("settings = %+v", got)
	}
	if _, ok := res.State.Values[runner.SettingsValue]; !ok || string(res.State.Values["k"]) != "1" {
		t.Errorf("values = %s", res.State.Values)
	}
	if !slices.Equal(a.Settings.Stop, []string{"END"}) {
		t.Errorf("the agent's settings changed: %+v", a.Settings)
	}
	// A higher max_tokens does not raise the agent's.
	if _, err := r.Run(t.Context(), "hi", runner.WithSettings(model.Settings{MaxTokens: 1000})); err != nil {
		t.Fatal(err)
	}
	if got := rec.last(t).Settings; got.MaxTokens != 100 {
		t.Errorf("max tokens = %d", got.MaxTokens)
	}
	// The best-effort knobs of an OpenAI request reach the model too.
	no := false
	if _, err := r.Run(t.Context(), "hi", runner.WithSettings(model.Settings{Seed: new(int64(7)), PresencePenalty: new(0.5), FrequencyPenalty: new(0.25),
		LogitBias: map[string]int{"42": 3}, User: "u1", PromptCacheKey: "k", Verbosity: "low", ParallelToolCalls: &no})); err != nil {
		t.Fatal(err)
	}
	if got := rec.last(t).Settings; got.Seed == nil || *got.Seed != 7 || *got.PresencePenalty != 0.5 || *got.FrequencyPenalty != 0.25 ||
		got.LogitBias["42"] != 3 || got.User != "u1" || got.PromptCacheKey != "k" || got.Verbosity != "low" || *got.ParallelToolCalls || got.MaxTokens != 100 {
		t.Errorf("settings = %+v", got)
	}
}
