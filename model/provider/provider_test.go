package provider

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/internal/providertest"
	"github.com/batonhq/baton/model/openaimodel"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

func TestBuild(t *testing.T) {
	t.Parallel()
	vars := env(map[string]string{
		"OPENAI_API_KEY":    "sk-openai-0000000000",
		"ANTHROPIC_API_KEY": "sk-ant-00000000000",
		"TEAM_KEY":          " sk-team-000000000\n",
		"EMPTY":             "",
	})
	for _, tc := range []struct {
		name string
		spec Spec
		// want is the type and Name() of the model, or err the error.
		want string
		err  error
	}{
		{"OpenAI", Spec{Model: "openai:gpt-4o-mini"}, "openai:gpt-4o-mini", nil},
		{"OpenAIResponses", Spec{Model: "openai-responses:gpt-5.5"}, "openai:gpt-5.5", nil},
		{"Anthropic", Spec{Model: "anthropic:claude-sonnet-4-5"}, "anthropic:claude-sonnet-4-5", nil},
		{"CompatibleNoKey", Spec{Model: "openai-compatible:llama3.1:8b", BaseURL: "http://localhost:11434/v1"}, "openai-compatible:llama3.1:8b", nil},
		{"CompatibleKeyEnv", Spec{Model: "openai-compatible:qwen", BaseURL: "http://vllm:8000/v1", APIKeyEnv: "TEAM_KEY"}, "openai-compatible:qwen", nil},
		{"PerAgentKeyEnv", Spec{Model: "anthropic:claude-haiku-4-5", APIKeyEnv: "TEAM_KEY"}, "anthropic:claude-haiku-4-5", nil},
		{"UnknownPrefix", Spec{Model: "gemini:gemini-2.5-pro"}, "", ErrUnknownProvider},
		{"NoPrefix", Spec{Model: "gpt-4o"}, "", ErrUnknownProvider},
		{"Scripted", Spec{Model: "scripted:demo"}, "", ErrUnknownProvider},
		{"NoName", Spec{Model: "openai:"}, "", nil},
		{"MissingKeyEnvNamed", Spec{Model: "openai:gpt-4o", APIKeyEnv: "NOPE"}, "", ErrMissingKey},
		{"EmptyKey", Spec{Model: "anthropic:claude", APIKeyEnv: "EMPTY"}, "", ErrMissingKey},
		{"CompatibleNamedKeyMissing", Spec{Model: "openai-compatible:x", BaseURL: "http://h/v1", APIKeyEnv: "NOPE"}, "", ErrMissingKey},
		{"CompatibleNeedsBaseURL", Spec{Model: "openai-compatible:llama3"}, "", ErrMissingBaseURL},
		{"BadBaseURL", Spec{Model: "openai:gpt-4o", BaseURL: "not a url"}, "", openaimodel.ErrConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := build(tc.spec, vars)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("build(%+v) succeeded", tc.spec)
				}
				if tc.err != nil && !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				if m != nil {
					t.Errorf("non-nil model %v with an error", m)
				}
				for _, secret := range []string{"sk-openai", "sk-ant", "sk-team"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error %q holds a key", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := m.(interface{ Name() string }).Name(); n != tc.want {
				t.Errorf("model %q, want %q", n, tc.want)
			}
		})
	}
	// Without any key in the environment.
	for _, s := range []string{"openai:gpt-4o", "openai-responses:gpt-5", "anthropic:claude"} {
		if _, err := build(Spec{Model: s}, env(nil)); !errors.Is(err, ErrMissingKey) {
			t.Errorf("%s without a key: %v", s, err)
		}
	}
}

// TestKeysReachTheServer checks which key each provider sends, end to end.
func TestKeysReachTheServer(t *testing.T) {
	t.Parallel()
	vars := env(map[string]string{"OPENAI_API_KEY": "sk-openai-1", "ANTHROPIC_API_KEY": "sk-ant-1", "TEAM_KEY": "sk-team-1"})
	for _, tc := range []struct {
		model, keyEnv, header, want string
		wire                        providertest.Wire
	}{
		{"openai:gpt-4o", "", "Authorization", "Bearer sk-openai-1", providertest.ChatWire{Model: "m"}},
		{"openai-responses:gpt-5", "TEAM_KEY", "Authorization", "Bearer sk-team-1", providertest.ResponsesWire{Model: "m"}},
		{"openai-compatible:llama3", "", "Authorization", "", providertest.ChatWire{Model: "m"}},
		{"anthropic:claude", "", "X-Api-Key", "sk-ant-1", providertest.AnthropicWire{Model: "m"}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Reply{Body: tc.wire.Stream("hi", nil)})
			m, err := build(Spec{Model: tc.model, BaseURL: srv.URL, APIKeyEnv: tc.keyEnv, HTTPClient: &http.Client{}}, vars)
			if err != nil {
				t.Fatal(err)
			}
			r, err := model.Collect(m.Stream(t.Context(), &model.Request{Messages: []message.Message{message.User("hi")}}))
			if err != nil {
				t.Fatal(err)
			}
			if r.Message.Text() != "hi" {
				t.Errorf("text %q", r.Message.Text())
			}
			if got := srv.Last(t).Header.Get(tc.header); got != tc.want {
				t.Errorf("%s = %q, want %q", tc.header, got, tc.want)
			}
		})
	}
}
