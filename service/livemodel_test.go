package service_test

import (
	"testing"

	"github.com/batonhq/baton/model/provider"
	"github.com/batonhq/baton/service"
)

func TestParseModel(t *testing.T) {
	t.Setenv("OLLAMA_HOST", "")
	t.Setenv(provider.OpenAIKeyEnv, "")
	for _, tt := range []struct {
		in   string
		want provider.Spec
		bad  bool
	}{
		{in: "openai:gpt-4.1-mini", want: provider.Spec{Model: "openai:gpt-4.1-mini"}},
		{in: "openai-responses:gpt-4.1-mini", want: provider.Spec{Model: "openai-responses:gpt-4.1-mini"}},
		{in: "anthropic:claude-sonnet-4-5", want: provider.Spec{Model: "anthropic:claude-sonnet-4-5"}},
		{in: "ollama:llama3.2", want: provider.Spec{Model: "openai-compatible:llama3.2", BaseURL: "http://localhost:11434/v1"}},
		{in: "ollama:qwen3:8b", want: provider.Spec{Model: "openai-compatible:qwen3:8b", BaseURL: "http://localhost:11434/v1"}},
		{in: "openai-compatible:qwen3:8b@http://gpu:8000/v1", want: provider.Spec{Model: "openai-compatible:qwen3:8b", BaseURL: "http://gpu:8000/v1"}},
		{in: "openai-compatible:qwen3", bad: true},
		{in: "openai-compatible:qwen3@gpu:8000", bad: true},
		{in: "llama3.2", bad: true},
		{in: "scripted:x", bad: true},
		{in: "openai:", bad: true},
	} {
		got, err := service.ParseModel(tt.in)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("ParseModel(%q) = %+v, %v", tt.in, got, err)
		}
	}
	t.Setenv("OLLAMA_HOST", "0.0.0.0:9999")
	if got, _ := service.ParseModel("ollama:m"); got.BaseURL != "http://0.0.0.0:9999/v1" {
		t.Errorf("OLLAMA_HOST: %+v", got)
	}
}
