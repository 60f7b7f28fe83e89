package runner

import (
	"context"

	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/transfer"
)

// Observer is told about the parts of a run, for tracing and metrics. Each
// Start method returns the context the part runs in and a function called
// once when the part ends. Implementations must be safe for concurrent use
// and cheap: they sit on the runner's hot path.
type Observer interface {
	StartRun(ctx context.Context, info RunInfo) (context.Context, func(res *Result, err error))
	StartModel(ctx context.Context, info ModelInfo) (context.Context, func(resp *model.Response, err error))
	StartTool(ctx context.Context, info ToolInfo) (context.Context, func(output string, isError bool, err error))
	// Transfer reports a transfer attempt; outcome is "ok", "rejected" or "limit".
	Transfer(ctx context.Context, tc *transfer.Context, outcome string)
}

// RunInfo describes a run to an [Observer].
type RunInfo struct {
	RunID, ThreadID, Network, Agent string
	Resumed                         bool
}

// ModelInfo describes a model call to an [Observer].
type ModelInfo struct {
	RunID, Agent, Model string
	Attempt             int
}

// ToolInfo describes a tool execution to an [Observer].
type ToolInfo struct {
	RunID, Agent, Tool, CallID string
	Kind                       string
}

type nopObserver struct{}

func (nopObserver) StartRun(ctx context.Context, _ RunInfo) (context.Context, func(*Result, error)) {
	return ctx, func(*Result, error) {}
}
func (nopObserver) StartModel(ctx context.Context, _ ModelInfo) (context.Context, func(*model.Response, error)) {
	return ctx, func(*model.Response, error) {}
}
func (nopObserver) StartTool(ctx context.Context, _ ToolInfo) (context.Context, func(string, bool, error)) {
	return ctx, func(string, bool, error) {}
}
func (nopObserver) Transfer(context.Context, *transfer.Context, string) {}
