package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"

	"github.com/batonhq/baton/mcptool"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/provider"
	"github.com/batonhq/baton/netspec"
)

// LoadOptions tune [Load]. The zero value loads with real providers and the
// file's own tools.
type LoadOptions struct {
	// Tools implement tools declared in the file by Go functions, by name;
	// they take precedence over a fixed `result:` in the file.
	Tools map[string]ToolFunc
	// HTTPTools implement tools declared in the file by an HTTP endpoint,
	// by name: see [HTTPTool]. A name the file does not declare is an
	// error.
	HTTPTools map[string]string
	// HTTPClient is used by providers and HTTP tools. Defaults to
	// http.DefaultClient.
	HTTPClient *http.Client
	// Offline accepts provider models whose API key is missing: they fail
	// when called. For checking a file (`baton validate`).
	Offline bool
	// WrapModel, if set, wraps every agent's model (`baton run --record`).
	WrapModel func(agentName string, m model.Model) model.Model
	// WrapTool, if set, wraps the function of every tool of the file, once
	// per tool (see netspec.Options.WrapTool; `baton eval` answers tools
	// from a recording with it). It wraps Tools and HTTPTools too.
	WrapTool func(name string, fn ToolFunc) ToolFunc
	// MCP, if set, holds the sessions with the file's MCP servers (package
	// mcptool; several files may share it) and its caller closes it. Nil:
	// Load opens sessions of the network's own, which the returned spec's
	// Close ends (Service.Close calls it).
	MCP *mcptool.Sessions
	// Model, if set, is a live model that replaces the model of every
	// agent of the file — scripted ones included — and its summary model;
	// remote A2A agents keep theirs. See [ParseModel] for the forms
	// (openai:, openai-responses:, anthropic:, ollama:,
	// openai-compatible:MODEL@URL). The baton commands' --model flag
	// sets it (default $BATON_MODEL).
	Model string
	// Logger gets the MCP servers' standard error and the remote agents'
	// reconnections. Defaults to a logger that discards (Open gives its
	// own).
	Logger *slog.Logger
}

// ErrUnknownTool: an implementation is given for a tool the network does
// not declare.
var ErrUnknownTool = errors.New("service: the network declares no tool")

// ToolFunc implements a tool: it gets the call's JSON arguments and returns
// the result the model sees. agent.CallFromContext(ctx) gives the call's
// idempotency key.
type ToolFunc = func(ctx context.Context, args json.RawMessage) (string, error)

// Load loads a network file with real model providers (openai:,
// openai-responses:, anthropic:, openai-compatible: with base_url; API keys
// from the environment), the tools of opts, the tools of its MCP servers
// (started now: see LoadOptions.MCP) and its remote A2A agents: what every
// baton command and the service use. A problem in the file is a
// *netspec.Error listing each with its line. Call the spec's Close when
// done with it, unless a service took it over (DefinitionOf).
func Load(path string, opts LoadOptions) (*netspec.Spec, error) {
	tools := map[string]ToolFunc{}
	for name, f := range opts.Tools {
		tools[name] = f
	}
	client := opts.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	for name, url := range opts.HTTPTools {
		tools[name] = HTTPTool(name, url, client)
	}
	mcp, owned, o := external(opts, client)
	o.Provider, o.Tools, o.WrapModel, o.WrapTool, o.HTTPClient = providers(opts.Offline), tools, opts.WrapModel, opts.WrapTool, opts.HTTPClient
	err := liveModel(opts, &o)
	if err != nil {
		if owned {
			_ = mcp.Close()
		}
		return nil, fmt.Errorf("%s: --model: %w", path, err)
	}
	spec, err := netspec.Load(path, o)
	if err == nil {
		for name := range opts.HTTPTools {
			if !declares(spec, name) {
				err = fmt.Errorf("%s: --tool %s: %w %q", path, name, ErrUnknownTool, name)
			}
		}
	}
	if err != nil {
		if owned {
			_ = mcp.Close()
		}
		return nil, err
	}
	if owned {
		spec.Close = mcp.Close
	}
	return spec, nil
}

// declares reports whether an agent of spec has the tool.
func declares(spec *netspec.Spec, name string) bool {
	for _, a := range spec.Network.Agents() {
		for _, t := range a.Tools {
			if t.Name == name {
				return true
			}
		}
	}
	return false
}

// providers builds non-scripted models through model/provider. With offline
// set, a missing API key is not a problem: the model is checked but fails
// when called.
func providers(offline bool) func(netspec.ProviderSpec) (model.Model, error) {
	return func(s netspec.ProviderSpec) (model.Model, error) {
		m, err := provider.New(provider.Spec{Model: s.Model, BaseURL: s.BaseURL, APIKeyEnv: s.APIKeyEnv, HTTPClient: s.HTTPClient})
		if err != nil && offline && errors.Is(err, provider.ErrMissingKey) {
			return unavailable{err}, nil
		}
		return m, err
	}
}

// unavailable is a model that cannot be called, for validation only.
type unavailable struct{ err error }

func (u unavailable) Stream(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) { yield(model.Chunk{}, u.err) }
}
