package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/transfer"
)

// Attribute keys. The GenAI ones follow the OpenTelemetry GenAI semantic
// conventions; the semconv package of the SDK version in use has no GenAI
// keys yet, so they are plain strings.
const (
	keyOperation        = "gen_ai.operation.name"
	keyAgentName        = "gen_ai.agent.name"
	keyConversationID   = "gen_ai.conversation.id"
	keyProvider         = "gen_ai.provider.name"
	keyRequestModel     = "gen_ai.request.model"
	keyResponseID       = "gen_ai.response.id"
	keyResponseModel    = "gen_ai.response.model"
	keyFinishReasons    = "gen_ai.response.finish_reasons"
	keyInputTokens      = "gen_ai.usage.input_tokens"
	keyOutputTokens     = "gen_ai.usage.output_tokens"
	keyCacheReadTokens  = "gen_ai.usage.cache_read.input_tokens"
	keyCacheWriteTokens = "gen_ai.usage.cache_creation.input_tokens"
	keyToolName         = "gen_ai.tool.name"
	keyToolCallID       = "gen_ai.tool.call.id"
	keyToolType         = "gen_ai.tool.type"
	keyErrorType        = "error.type"

	keyRunID           = "baton.run_id"
	keyThreadID        = "baton.thread_id"
	keyNetwork         = "baton.network"
	keyResumed         = "baton.run.resumed"
	keyRunStatus       = "baton.run.status"
	keyRunLastAgent    = "baton.run.last_agent"
	keyRunTurns        = "baton.run.turns"
	keyRunTransfers    = "baton.run.transfers"
	keyModel           = "baton.model"
	keyAttempt         = "baton.model.attempt"
	keyReasoningTokens = "baton.usage.reasoning_tokens"
	keyToolKind        = "baton.tool.kind"
	keyTransferID      = "baton.transfer.id"
	keyTransferFrom    = "baton.transfer.from"
	keyTransferTo      = "baton.transfer.to"
	keyTransferType    = "baton.transfer.type"
	keyTransferTool    = "baton.transfer.tool"
	keyTransferHistory = "baton.transfer.history_policy"
	keyTransferXforms  = "baton.transfer.transforms"
	keyTransferOutcome = "baton.transfer.outcome"
)

// SpanTransfer is the name of the span of a transfer attempt.
const SpanTransfer = "baton.transfer"

var (
	opInvokeAgent = attribute.String(keyOperation, "invoke_agent")
	opChat        = attribute.String(keyOperation, "chat")
	opExecuteTool = attribute.String(keyOperation, "execute_tool")

	// Span options made once: building them per span allocates.
	kindInternal = trace.WithSpanKind(trace.SpanKindInternal)
	kindClient   = trace.WithSpanKind(trace.SpanKindClient)

	// finishReasons are the attributes of the normalised finish reasons.
	finishReasons = map[string]attribute.KeyValue{}
)

func init() {
	for _, r := range []string{"stop", "tool_calls", "length", "content_filter", "refusal", "pause_turn"} {
		finishReasons[r] = attribute.StringSlice(keyFinishReasons, []string{r})
	}
}

// observer implements runner.Observer. Each of tracer, m and log may be nil
// (that part off); the hot paths check before doing any work.
type observer struct {
	tracer trace.Tracer
	m      *instruments
	log    *slog.Logger

	models sync.Map // runner.ModelInfo.Model -> *modelDesc
	tools  sync.Map // tool name -> *toolDesc
	agents sync.Map // agent name -> invoke_agent span name
}

// runTrack is what the "run ended" line needs from a run's model calls
// and transfers. It lives in the run's context, only when the run log is
// on.
type runTrack struct {
	mu         sync.Mutex
	transferID string
	modelRunID string
}

type runTrackKey struct{}

func trackOf(ctx context.Context) *runTrack {
	rt, _ := ctx.Value(runTrackKey{}).(*runTrack)
	return rt
}

func (o *observer) StartRun(ctx context.Context, info runner.RunInfo) (context.Context, func(*runner.Result, error)) {
	start := time.Now()
	var span trace.Span
	if o.tracer != nil {
		attrs := make([]attribute.KeyValue, 0, 7)
		attrs = append(attrs, opInvokeAgent, attribute.String(keyAgentName, info.Agent), attribute.String(keyRunID, info.RunID),
			attribute.String(keyNetwork, info.Network))
		if info.ThreadID != "" {
			attrs = append(attrs, attribute.String(keyThreadID, info.ThreadID), attribute.String(keyConversationID, info.ThreadID))
		}
		if info.Resumed {
			attrs = append(attrs, attribute.Bool(keyResumed, true))
		}
		ctx, span = o.tracer.Start(ctx, o.agentSpanName(info.Agent), kindInternal, trace.WithAttributes(attrs...))
	}
	var rt *runTrack
	if o.log != nil {
		rt = &runTrack{}
		ctx = context.WithValue(ctx, runTrackKey{}, rt)
		o.started(ctx, info)
	}
	return ctx, func(res *runner.Result, err error) {
		kind := string(runner.KindOf(err))
		status := "failed"
		if res != nil {
			status = string(res.Status)
		}
		if o.m != nil {
			o.m.runs.Add(ctx, 1, o.m.opt(labelKey{metric: metricRuns, a: status}, func() []attribute.KeyValue {
				return []attribute.KeyValue{attribute.String("status", status)}
			}))
			if err != nil {
				o.m.errors.Add(ctx, 1, o.m.opt(labelKey{metric: metricErrors, a: kind}, func() []attribute.KeyValue {
					return []attribute.KeyValue{attribute.String("kind", kind)}
				}))
			}
		}
		if span != nil {
			if span.IsRecording() {
				attrs := []attribute.KeyValue{attribute.String(keyRunStatus, status)}
				if res != nil {
					attrs = append(attrs, attribute.String(keyRunLastAgent, res.LastAgent), attribute.Int(keyRunTurns, res.Turns),
						attribute.Int(keyRunTransfers, res.Transfers), attribute.Int64(keyInputTokens, res.Usage.InputTokens),
						attribute.Int64(keyOutputTokens, res.Usage.OutputTokens))
				}
				span.SetAttributes(attrs...)
				if err != nil {
					span.SetAttributes(attribute.String(keyErrorType, kind))
					span.SetStatus(codes.Error, RedactString(err.Error()))
				}
			}
			span.End()
		}
		if o.log != nil {
			o.ended(ctx, info, rt, start, res, err, status, kind)
		}
	}
}

// agentSpanName returns "invoke_agent <agent>", made once per agent.
func (o *observer) agentSpanName(agent string) string {
	if n, ok := o.agents.Load(agent); ok {
		return n.(string)
	}
	n := "invoke_agent " + agent
	o.agents.Store(agent, n)
	return n
}

// Messages of the run log's lines.
const (
	msgRunStarted = "run started"
	msgRunEnded   = "run ended"
)

// traceAttrs appends the ids that join a run's log line to its trace: the
// trace and span ids of ctx's span (the run's invoke_agent span when
// tracing is on, else a caller's span, if any), and the trace id of the
// request a continuation's span links to (see [Telemetry.StartLinked]).
// The lines carry them themselves, so that they join whatever handler
// writes them.
func traceAttrs(ctx context.Context, attrs []slog.Attr) []slog.Attr {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		attrs = append(attrs, slog.String(logTraceID, sc.TraceID().String()), slog.String(logSpanID, sc.SpanID().String()))
	}
	if l, ok := ctx.Value(linkedKey{}).(trace.SpanContext); ok {
		attrs = append(attrs, slog.String("linked_trace_id", l.TraceID().String()))
	}
	return attrs
}

// started logs the run's first line, at Info.
func (o *observer) started(ctx context.Context, info runner.RunInfo) {
	if !o.log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.String("run_id", info.RunID), slog.String("thread_id", info.ThreadID), slog.String("network", info.Network),
		slog.String("agent", info.Agent))
	if info.Resumed {
		attrs = append(attrs, slog.Bool("resumed", true))
	}
	o.log.LogAttrs(ctx, slog.LevelInfo, msgRunStarted, traceAttrs(ctx, attrs)...)
}

// ended logs the run's last line: at Info, or Error when the run failed.
func (o *observer) ended(ctx context.Context, info runner.RunInfo, rt *runTrack, start time.Time, res *runner.Result, err error, status, kind string) {
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelError
	}
	if !o.log.Enabled(ctx, level) {
		return
	}
	rt.mu.Lock()
	tid, mid := rt.transferID, rt.modelRunID
	rt.mu.Unlock()
	attrs := make([]slog.Attr, 0, 20)
	attrs = append(attrs, slog.String("run_id", info.RunID), slog.String("thread_id", info.ThreadID), slog.String("network", info.Network),
		slog.String("transfer_id", tid), slog.String("model_run_id", mid), slog.String("status", status))
	if res != nil {
		attrs = append(attrs, slog.String("agent", res.LastAgent), slog.Int("turns", res.Turns), slog.Int("transfers", res.Transfers),
			slog.Int64("tokens_used", res.Usage.Total()), slog.Int64("input_tokens", res.Usage.InputTokens),
			slog.Int64("output_tokens", res.Usage.OutputTokens))
	} else {
		attrs = append(attrs, slog.String("agent", info.Agent), slog.Int64("tokens_used", 0))
	}
	if info.Resumed {
		attrs = append(attrs, slog.Bool("resumed", true))
	}
	attrs = append(attrs, slog.Int64("duration_ms", time.Since(start).Milliseconds()))
	if err != nil {
		attrs = append(attrs, slog.String("error_kind", kind), slog.String("error", RedactString(err.Error())))
	}
	o.log.LogAttrs(ctx, level, msgRunEnded, traceAttrs(ctx, attrs)...)
}

// modelDesc is what a model name gives: provider, request model, span name
// and cached attributes.
type modelDesc struct {
	provider, model string
	spanName        string
	startAttrs      []attribute.KeyValue
}

// splitModel parses an agent's ModelName ("openai:gpt-4o", "scripted").
func splitModel(name string) (provider, model string) {
	p, m, ok := strings.Cut(name, ":")
	switch {
	case !ok && name == "scripted":
		return "scripted", "scripted"
	case !ok:
		if name == "" {
			name = "unknown"
		}
		return "unknown", name
	case p == "openai-responses":
		return "openai", m
	}
	return p, m
}

func (o *observer) model(name string) *modelDesc {
	if d, ok := o.models.Load(name); ok {
		return d.(*modelDesc)
	}
	p, m := splitModel(name)
	d := &modelDesc{provider: p, model: m, spanName: "chat " + m,
		startAttrs: []attribute.KeyValue{opChat, attribute.String(keyProvider, p), attribute.String(keyRequestModel, m), attribute.String(keyModel, name)}}
	o.models.Store(name, d)
	return d
}

func (o *observer) modelOpt(d *modelDesc, metricName, v string) metric.MeasurementOption {
	label := "outcome"
	if metricName == metricTokens {
		label = "direction"
	}
	return o.m.opt(labelKey{metric: metricName, a: d.provider, b: d.model, c: v}, func() []attribute.KeyValue {
		return []attribute.KeyValue{attribute.String("provider", d.provider), attribute.String("model", d.model), attribute.String(label, v)}
	})
}

// startCall starts the span of a model or tool call, with the call's
// static attributes and then extra, when tracing is on; else the span is nil.
func (o *observer) startCall(ctx context.Context, name string, kind trace.SpanStartOption, static []attribute.KeyValue, extra ...attribute.KeyValue) (context.Context, trace.Span) {
	if o.tracer == nil {
		return ctx, nil
	}
	attrs := make([]attribute.KeyValue, 0, len(static)+len(extra))
	attrs = append(append(attrs, static...), extra...)
	return o.tracer.Start(ctx, name, kind, trace.WithAttributes(attrs...))
}

func (o *observer) StartModel(ctx context.Context, info runner.ModelInfo) (context.Context, func(*model.Response, error)) {
	d := o.model(info.Model)
	start := time.Now()
	ctx, span := o.startCall(ctx, d.spanName, kindClient, d.startAttrs, attribute.String(keyAgentName, info.Agent), attribute.Int(keyAttempt, info.Attempt))
	rt := trackOf(ctx)
	return ctx, func(resp *model.Response, err error) {
		if o.m != nil {
			outcome := "ok"
			if err != nil {
				outcome = "error"
			}
			o.m.modelCalls.Add(ctx, 1, o.modelOpt(d, metricModelCalls, outcome))
			o.m.modelDur.Record(ctx, time.Since(start).Seconds(), o.modelOpt(d, metricModelDuration, outcome))
			if resp != nil {
				if n := resp.Usage.InputTokens; n > 0 {
					o.m.tokens.Add(ctx, n, o.modelOpt(d, metricTokens, "input"))
				}
				if n := resp.Usage.OutputTokens; n > 0 {
					o.m.tokens.Add(ctx, n, o.modelOpt(d, metricTokens, "output"))
				}
			}
		}
		if rt != nil && resp != nil && resp.RequestID != "" {
			rt.mu.Lock()
			rt.modelRunID = resp.RequestID
			rt.mu.Unlock()
		}
		if span == nil {
			return
		}
		if span.IsRecording() {
			if resp != nil {
				u := resp.Usage
				attrs := make([]attribute.KeyValue, 0, 8)
				attrs = append(attrs, attribute.Int64(keyInputTokens, u.InputTokens), attribute.Int64(keyOutputTokens, u.OutputTokens))
				if resp.RequestID != "" {
					attrs = append(attrs, attribute.String(keyResponseID, resp.RequestID))
				}
				if resp.Model != "" {
					attrs = append(attrs, attribute.String(keyResponseModel, resp.Model))
				}
				if r := resp.FinishReason; r != "" {
					kv, ok := finishReasons[r]
					if !ok {
						kv = attribute.StringSlice(keyFinishReasons, []string{r})
					}
					attrs = append(attrs, kv)
				}
				if u.CachedTokens > 0 {
					attrs = append(attrs, attribute.Int64(keyCacheReadTokens, u.CachedTokens))
				}
				if u.CacheCreationTokens > 0 {
					attrs = append(attrs, attribute.Int64(keyCacheWriteTokens, u.CacheCreationTokens))
				}
				if u.ReasoningTokens > 0 {
					attrs = append(attrs, attribute.Int64(keyReasoningTokens, u.ReasoningTokens))
				}
				span.SetAttributes(attrs...)
			}
			if err != nil {
				span.SetAttributes(attribute.String(keyErrorType, modelErrorType(err)))
				var me *model.Error
				if errors.As(err, &me) && me.RequestID != "" {
					span.SetAttributes(attribute.String(keyResponseID, me.RequestID))
				}
				span.SetStatus(codes.Error, RedactString(err.Error()))
			}
		}
		span.End()
	}
}

// modelErrorType is the error.type of a failed model call: the HTTP status,
// else the provider's error code, else a class of the failure.
func modelErrorType(err error) string {
	var me *model.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &me) && me.StatusCode != 0:
		return strconv.Itoa(me.StatusCode)
	case me != nil && me.Code != "":
		return me.Code
	case me != nil:
		return "model_error"
	}
	return "_OTHER"
}

// toolDesc is what a tool name gives: span name, attributes and metric
// label sets.
type toolDesc struct {
	spanName   string
	startAttrs []attribute.KeyValue
	ok, failed metric.MeasurementOption
	dur        metric.MeasurementOption
}

// unknownTool labels calls of tools the agent does not have: their names
// come from the model, so they must not become label values or cache keys.
const unknownTool = "_unknown"

func (o *observer) tool(info *runner.ToolInfo) *toolDesc {
	known := info.Kind != ""
	if known {
		if d, ok := o.tools.Load(info.Tool); ok {
			return d.(*toolDesc)
		}
	}
	label, kvs := info.Tool, []attribute.KeyValue{opExecuteTool, attribute.String(keyToolName, info.Tool), attribute.String(keyToolType, "function")}
	if known {
		kvs = append(kvs, attribute.String(keyToolKind, info.Kind))
	} else {
		label = unknownTool
	}
	d := &toolDesc{spanName: "execute_tool " + info.Tool, startAttrs: kvs}
	if o.m != nil {
		d.ok = o.m.opt(labelKey{metric: metricToolCalls, a: label, b: "ok"}, func() []attribute.KeyValue {
			return []attribute.KeyValue{attribute.String("tool", label), attribute.String("outcome", "ok")}
		})
		d.failed = o.m.opt(labelKey{metric: metricToolCalls, a: label, b: "error"}, func() []attribute.KeyValue {
			return []attribute.KeyValue{attribute.String("tool", label), attribute.String("outcome", "error")}
		})
		d.dur = o.m.opt(labelKey{metric: metricToolDuration, a: label}, func() []attribute.KeyValue {
			return []attribute.KeyValue{attribute.String("tool", label)}
		})
	}
	if known {
		o.tools.Store(info.Tool, d)
	}
	return d
}

func (o *observer) StartTool(ctx context.Context, info runner.ToolInfo) (context.Context, func(string, bool, error)) {
	d := o.tool(&info)
	start := time.Now()
	ctx, span := o.startCall(ctx, d.spanName, kindInternal, d.startAttrs, attribute.String(keyToolCallID, info.CallID), attribute.String(keyAgentName, info.Agent))
	return ctx, func(_ string, isError bool, err error) {
		if o.m != nil {
			opt := d.ok
			if isError || err != nil {
				opt = d.failed
			}
			o.m.toolCalls.Add(ctx, 1, opt)
			o.m.toolDur.Record(ctx, time.Since(start).Seconds(), d.dur)
		}
		if span == nil {
			return
		}
		switch {
		case err != nil:
			span.SetAttributes(attribute.String(keyErrorType, string(runner.KindOf(err))))
			span.SetStatus(codes.Error, RedactString(err.Error()))
		case isError:
			span.SetAttributes(attribute.String(keyErrorType, "tool_error"))
			span.SetStatus(codes.Error, "the tool returned an error result")
		}
		span.End()
	}
}

func (o *observer) Transfer(ctx context.Context, tc *transfer.Context, outcome string) {
	if o.m != nil {
		o.m.transfers.Add(ctx, 1, o.m.opt(labelKey{metric: metricTransfers, a: tc.From, b: tc.To, c: string(tc.Type), d: outcome}, func() []attribute.KeyValue {
			return []attribute.KeyValue{attribute.String("from", tc.From), attribute.String("to", tc.To),
				attribute.String("type", string(tc.Type)), attribute.String("outcome", outcome)}
		}))
	}
	if rt := trackOf(ctx); rt != nil && outcome == "ok" {
		rt.mu.Lock()
		rt.transferID = tc.ID
		rt.mu.Unlock()
	}
	if o.tracer == nil {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 9)
	attrs = append(attrs, attribute.String(keyTransferFrom, tc.From), attribute.String(keyTransferTo, tc.To),
		attribute.String(keyTransferType, string(tc.Type)), attribute.String(keyTransferHistory, string(tc.History)),
		attribute.String(keyTransferOutcome, outcome), attribute.String(keyAgentName, tc.From))
	if len(tc.Transforms) > 0 {
		attrs = append(attrs, attribute.StringSlice(keyTransferXforms, tc.Transforms))
	}
	if tc.ID != "" {
		attrs = append(attrs, attribute.String(keyTransferID, tc.ID))
	}
	if tc.Tool != "" {
		attrs = append(attrs, attribute.String(keyTransferTool, tc.Tool))
	}
	_, span := o.tracer.Start(ctx, SpanTransfer, kindInternal, trace.WithAttributes(attrs...))
	span.End()
}
