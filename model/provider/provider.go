// Package provider builds a [model.Model] from the "model:" string of a
// network YAML file: "openai:<model>", "openai-responses:<model>",
// "anthropic:<model>" or "openai-compatible:<model>". It is the only package
// that imports every provider adapter; the YAML loader calls [New], and
// handles "scripted:" models itself.
package provider

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/anthropicmodel"
	"github.com/batonhq/baton/model/openaimodel"
)

// Prefixes of Spec.Model.
const (
	OpenAI           = "openai"
	OpenAIResponses  = "openai-responses"
	Anthropic        = "anthropic"
	OpenAICompatible = "openai-compatible"
)

// Default environment variables holding API keys.
const (
	OpenAIKeyEnv    = "OPENAI_API_KEY"
	AnthropicKeyEnv = "ANTHROPIC_API_KEY"
)

var (
	// ErrUnknownProvider is wrapped by [New] when Spec.Model has no known prefix.
	ErrUnknownProvider = errors.New("provider: unknown model provider")
	// ErrMissingKey is wrapped by [New] when the API key's environment
	// variable is unset or empty.
	ErrMissingKey = errors.New("provider: missing API key")
	// ErrMissingBaseURL is wrapped by [New] for an openai-compatible model
	// without a base URL.
	ErrMissingBaseURL = errors.New("provider: missing base_url")
)

// Spec is one agent's model configuration, as the YAML loader reads it.
type Spec struct {
	// Model is "<provider>:<model name>", e.g. "openai:gpt-4o-mini" or
	// "openai-compatible:llama3.1:8b" (the name may itself hold colons).
	Model string
	// BaseURL overrides the provider's API base; required for
	// openai-compatible (e.g. "http://localhost:11434/v1").
	BaseURL string
	// APIKeyEnv names the environment variable that holds the API key.
	// Defaults to OPENAI_API_KEY (openai, openai-responses) or
	// ANTHROPIC_API_KEY (anthropic); openai-compatible sends no key unless
	// it is set.
	APIKeyEnv string
	// HTTPClient makes the requests; nil means a default client.
	HTTPClient *http.Client
}

// New returns the Model spec describes. The API key is read from the
// environment now, once; it never appears in errors.
func New(spec Spec) (model.Model, error) {
	return build(spec, os.LookupEnv)
}

func build(spec Spec, lookup func(string) (string, bool)) (model.Model, error) {
	prefix, name, ok := strings.Cut(strings.TrimSpace(spec.Model), ":")
	if !ok || prefix == "" {
		return nil, fmt.Errorf("%w: model %q: want <provider>:<model> with provider %s, %s, %s or %s",
			ErrUnknownProvider, spec.Model, OpenAI, OpenAIResponses, Anthropic, OpenAICompatible)
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, fmt.Errorf("provider: model %q: missing model name after %q", spec.Model, prefix+":")
	}
	key := func(def string) (string, error) {
		env := spec.APIKeyEnv
		if env == "" {
			env = def
		}
		if env == "" {
			return "", nil
		}
		v, _ := lookup(env)
		v = strings.TrimSpace(v)
		if v == "" {
			return "", fmt.Errorf("%w: model %q: environment variable %s is not set", ErrMissingKey, spec.Model, env)
		}
		return v, nil
	}
	switch prefix {
	case OpenAI, OpenAIResponses:
		k, err := key(OpenAIKeyEnv)
		if err != nil {
			return nil, err
		}
		api := openaimodel.APIChat
		if prefix == OpenAIResponses {
			api = openaimodel.APIResponses
		}
		m, err := openaimodel.New(openaimodel.Config{Model: name, API: api, BaseURL: spec.BaseURL, APIKey: k, HTTPClient: spec.HTTPClient})
		if err != nil {
			return nil, fmt.Errorf("provider: model %q: %w", spec.Model, err)
		}
		return m, nil
	case OpenAICompatible:
		if strings.TrimSpace(spec.BaseURL) == "" {
			return nil, fmt.Errorf("%w: model %q: openai-compatible needs the server's base_url (e.g. http://localhost:11434/v1)", ErrMissingBaseURL, spec.Model)
		}
		k, err := key("")
		if err != nil {
			return nil, err
		}
		m, err := openaimodel.New(openaimodel.Config{Model: name, Provider: openaimodel.ProviderCompatible, BaseURL: spec.BaseURL, APIKey: k, HTTPClient: spec.HTTPClient})
		if err != nil {
			return nil, fmt.Errorf("provider: model %q: %w", spec.Model, err)
		}
		return m, nil
	case Anthropic:
		k, err := key(AnthropicKeyEnv)
		if err != nil {
			return nil, err
		}
		m, err := anthropicmodel.New(anthropicmodel.Config{Model: name, BaseURL: spec.BaseURL, APIKey: k, HTTPClient: spec.HTTPClient})
		if err != nil {
			return nil, fmt.Errorf("provider: model %q: %w", spec.Model, err)
		}
		return m, nil
	case "scripted":
		return nil, fmt.Errorf("%w: model %q: scripted models are built by the network loader, not by provider.New", ErrUnknownProvider, spec.Model)
	}
	return nil, fmt.Errorf("%w: %q in model %q (want %s, %s, %s or %s)",
		ErrUnknownProvider, prefix, spec.Model, OpenAI, OpenAIResponses, Anthropic, OpenAICompatible)
}
