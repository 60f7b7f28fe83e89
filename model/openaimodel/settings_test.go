package openaimodel_test

import (
	"testing"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/internal/providertest"
	"github.com/batonhq/baton/model/openaimodel"
)

// The best-effort settings (seed, penalties, logit bias, the end user, the
// prompt cache key, verbosity) reach the APIs that take them: all of them
// OpenAI's Chat; user as user on a compatible server, which has no
// safety_identifier, prompt cache key or verbosity; only the end user, the
// cache key and verbosity (as text.verbosity) the Responses API, which has
// no seed, penalties or logit bias.
func TestBestEffortSettings(t *testing.T) {
	t.Parallel()
	st := model.Settings{Seed: new(int64(7)), PresencePenalty: new(0.5), FrequencyPenalty: new(-0.25),
		LogitBias: map[string]int{"50256": -100}, User: "user-1", PromptCacheKey: "support-v1", Verbosity: "low"}
	fields := []string{"seed", "presence_penalty", "frequency_penalty", "logit_bias", "user", "safety_identifier", "prompt_cache_key", "verbosity", "text"}
	for _, tc := range []struct {
		name string
		cfg  openaimodel.Config
		body []byte
		want map[string]any
	}{
		{"Chat", openaimodel.Config{}, providertest.ChatWire{Model: "m"}.Stream("hi", nil), map[string]any{
			"seed": 7.0, "presence_penalty": 0.5, "frequency_penalty": -0.25, "logit_bias": map[string]any{"50256": -100.0},
			"safety_identifier": "user-1", "prompt_cache_key": "support-v1", "verbosity": "low"}},
		{"Compatible", openaimodel.Config{Provider: openaimodel.ProviderCompatible}, providertest.ChatWire{Model: "m"}.Stream("hi", nil), map[string]any{
			"seed": 7.0, "presence_penalty": 0.5, "frequency_penalty": -0.25, "logit_bias": map[string]any{"50256": -100.0}, "user": "user-1"}},
		{"Responses", openaimodel.Config{API: openaimodel.APIResponses}, providertest.ResponsesWire{Model: "m"}.Stream("hi", nil), map[string]any{
			"safety_identifier": "user-1", "prompt_cache_key": "support-v1", "text": map[string]any{"verbosity": "low"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Reply{Body: tc.body})
			cfg := tc.cfg
			cfg.Model, cfg.BaseURL = "gpt-4.1", srv.URL+"/v1"
			m := newModel(t, cfg)
			if _, err := model.Collect(m.Stream(t.Context(), &model.Request{Messages: []message.Message{message.User("hi")}, Settings: st})); err != nil {
				t.Fatal(err)
			}
			providertest.CompareFields(t, srv.Last(t).JSON(t), tc.want, fields...)
		})
	}
}
