package service

import (
	"net/url"
	"strings"
	"testing"

	"github.com/batonhq/baton/model/provider"
)

// FuzzParseHTTPTool: what the --tool flag accepts is NAME=URL with a name
// and an http(s) URL with a host, split where the flag's text says.
func FuzzParseHTTPTool(f *testing.F) {
	for _, s := range []string{"refund=http://127.0.0.1:8080/refund", "a=https://x", "=http://x", "a=http://", "a=ftp://x", "a", "a=b=http://x", "a=http://x=y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		name, u, err := ParseHTTPTool(v)
		if err != nil {
			if !strings.Contains(err.Error(), "NAME=") {
				t.Fatalf("ParseHTTPTool(%q): error %q does not say what is expected", v, err)
			}
			return
		}
		if name == "" || strings.Contains(name, "=") || name+"="+u != v {
			t.Fatalf("ParseHTTPTool(%q) = %q, %q", v, name, u)
		}
		p, perr := url.Parse(u)
		if perr != nil || p.Host == "" || (p.Scheme != "http" && p.Scheme != "https") {
			t.Fatalf("ParseHTTPTool(%q) accepted %q, not an http(s) URL with a host (%v)", v, u, perr)
		}
	})
}

// FuzzParseModel: ParseModel never panics, and what it accepts names one
// of the providers, with an http(s) base URL where it gives one.
func FuzzParseModel(f *testing.F) {
	for _, s := range []string{"openai:gpt-4.1-mini", "openai-responses:o4", "anthropic:claude", "ollama:llama3.2", "openai-compatible:q@http://h:1/v1", "openai-compatible:q", "x:y", ":", "ollama: "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		spec, err := ParseModel(v)
		if err != nil {
			return
		}
		prefix, _, _ := strings.Cut(spec.Model, ":")
		switch prefix {
		case provider.OpenAI, provider.OpenAIResponses, provider.Anthropic, provider.OpenAICompatible:
		default:
			t.Fatalf("ParseModel(%q) = %+v: unknown provider", v, spec)
		}
		if spec.BaseURL != "" {
			if u, err := url.Parse(spec.BaseURL); err != nil || u.Host == "" {
				t.Fatalf("ParseModel(%q) base URL %q is not a URL with a host (%v)", v, spec.BaseURL, err)
			}
		}
	})
}
