package service

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/provider"
	"github.com/batonhq/baton/netspec"
)

// ModelEnv is the environment variable the baton commands read for
// [LoadOptions.Model] (their --model flag defaults to it).
const ModelEnv = "BATON_MODEL"

// ParseModel parses a live model as [LoadOptions.Model] takes it:
//
//	openai:gpt-4.1-mini                          OpenAI's Chat Completions (OPENAI_API_KEY)
//	openai-responses:gpt-4.1-mini                OpenAI's Responses API (OPENAI_API_KEY)
//	anthropic:claude-sonnet-4-5                  Anthropic's Messages API (ANTHROPIC_API_KEY)
//	ollama:llama3.2                              Ollama's OpenAI-compatible API at $OLLAMA_HOST,
//	                                             else http://localhost:11434 (no key)
//	openai-compatible:MODEL@http://HOST:PORT/v1  any OpenAI-compatible server (vLLM, LM Studio,
//	                                             llama.cpp, …); OPENAI_API_KEY is sent if set
func ParseModel(v string) (provider.Spec, error) {
	v = strings.TrimSpace(v)
	prefix, name, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return provider.Spec{}, fmt.Errorf("model %q: want openai:MODEL, openai-responses:MODEL, anthropic:MODEL, ollama:MODEL or openai-compatible:MODEL@URL", v)
	}
	switch prefix {
	case "ollama":
		host := strings.TrimSpace(os.Getenv("OLLAMA_HOST"))
		if host == "" {
			host = "http://localhost:11434"
		}
		if !strings.Contains(host, "://") {
			host = "http://" + host
		}
		return provider.Spec{Model: provider.OpenAICompatible + ":" + name, BaseURL: strings.TrimSuffix(host, "/") + "/v1"}, nil
	case provider.OpenAICompatible:
		at := strings.LastIndex(name, "@")
		if at < 0 {
			return provider.Spec{}, fmt.Errorf("model %q: want openai-compatible:MODEL@URL, e.g. openai-compatible:llama3.2@http://localhost:11434/v1", v)
		}
		base := name[at+1:]
		if u, err := url.Parse(base); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return provider.Spec{}, fmt.Errorf("model %q: %q is not an http(s) URL", v, base)
		}
		spec := provider.Spec{Model: provider.OpenAICompatible + ":" + name[:at], BaseURL: base}
		if os.Getenv(provider.OpenAIKeyEnv) != "" {
			spec.APIKeyEnv = provider.OpenAIKeyEnv
		}
		return spec, nil
	case provider.OpenAI, provider.OpenAIResponses, provider.Anthropic:
		return provider.Spec{Model: v}, nil
	}
	return provider.Spec{}, fmt.Errorf("model %q: unknown provider %q (want openai, openai-responses, anthropic, ollama or openai-compatible)", v, prefix)
}

// liveModel sets o up to replace every model of the file but its remote
// agents' with opts.Model.
func liveModel(opts LoadOptions, o *netspec.Options) error {
	if opts.Model == "" {
		return nil
	}
	spec, err := ParseModel(opts.Model)
	if err != nil {
		return err
	}
	spec.HTTPClient = opts.HTTPClient
	live, err := provider.New(spec)
	if err != nil {
		return err
	}
	remote := map[string]bool{}
	if r := o.Remote; r != nil {
		o.Remote = func(s netspec.Remote) (model.Model, error) {
			remote[s.Agent] = true
			return r(s)
		}
	}
	wrap := o.WrapModel
	o.WrapModel = func(name string, m model.Model) model.Model {
		if !remote[name] {
			m = live
		}
		if wrap != nil {
			m = wrap(name, m)
		}
		return m
	}
	return nil
}
