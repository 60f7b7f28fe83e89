package telemetry_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/slogtest"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/batonhq/baton/internal/logtest"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/telemetry"
)

// Secrets of the shapes the logger must hide.
var (
	openAIKey    = "sk-proj-" + strings.Repeat("Ab3x", 12)
	anthropicKey = "sk-ant-api03-" + strings.Repeat("Zq9_", 12)
	batonKey     = store.NewAPIKeySecret()
	bearer       = "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl"
	plainSecret  = "hunter2-correct-horse"
)

// stringer formats as a string with a key in it.
type stringer struct{}

func (stringer) String() string { return "config{key=" + openAIKey + "}" }

func TestLoggerRedacts(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			log, err := telemetry.NewLogger(&buf, format, slog.LevelDebug)
			if err != nil {
				t.Fatal(err)
			}
			log.Info("calling provider with "+openAIKey,
				"api_key", plainSecret,
				"Authorization", bearer,
				"password", plainSecret,
				"client_secret", plainSecret,
				"token", plainSecret,
				"access_token", plainSecret,
				"X-Auth-Token", plainSecret,
				"note", "the key is "+anthropicKey+" for now",
				"baton_key", "key="+batonKey,
				"error", fmt.Errorf("provider said: invalid key %s", anthropicKey),
				"headers", map[string][]string{"Authorization": {plainSecret}, "Accept": {"application/json"}},
				"keys", []string{"ok", openAIKey},
				"raw", json.RawMessage(`{"nested":{"api_key":"`+plainSecret+`"},"n":1}`),
				"cfg", stringer{},
				slog.Group("auth", "user", plainSecret),
				slog.Group("provider", slog.String("name", "openai"), slog.String("apiKey", plainSecret)),
				// Counts named like tokens are kept.
				"tokens_used", 510, "input_tokens", 450, "max_tokens", 1024, "token_count", 7,
				"transfer_id", "run_1-h1", "model", "gpt-4o",
			)
			log.With("secret", plainSecret).WithGroup("req").Warn("with attrs", "authorization", bearer, "status", 401)
			out := buf.String()
			for _, s := range []string{openAIKey, anthropicKey, batonKey, bearer, plainSecret, "eyJhbGci"} {
				if strings.Contains(out, s) {
					t.Errorf("output contains secret %q:\n%s", s, out)
				}
			}
			for _, s := range []string{"510", "450", "1024", "transfer_id", "run_1-h1", "gpt-4o", "application/json", telemetry.Redacted, "calling provider with"} {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
			if format == "json" {
				var m map[string]any
				line, _, _ := strings.Cut(out, "\n")
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatal(err)
				}
				if m["tokens_used"] != 510.0 || m["token_count"] != 7.0 {
					t.Errorf("counts: tokens_used=%v token_count=%v", m["tokens_used"], m["token_count"])
				}
				if m["raw"].(map[string]any)["n"] != 1.0 {
					t.Errorf("raw = %v, want its other fields kept", m["raw"])
				}
			}
		})
	}
}

func TestRedactString(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"no secret here: tokens_used=5 sk-learn task-abcdefghijklmnopqrstuvwxyz", "no secret here: tokens_used=5 sk-learn task-abcdefghijklmnopqrstuvwxyz"},
		{"key " + openAIKey + ".", "key [REDACTED]."},
		{anthropicKey, "[REDACTED]"},
		{"Authorization: " + bearer, "Authorization: [REDACTED]"},
		{"bearer abcdefgh12345678", "[REDACTED]"},
		{batonKey, "[REDACTED]"},
		{store.APIKeyPrefix(batonKey), store.APIKeyPrefix(batonKey)}, // the stored prefix is not a secret
		{"baton_model_call_duration_seconds", "baton_model_call_duration_seconds"},
		{"aws AKIAIOSFODNN7EXAMPLE", "aws [REDACTED]"},
	}
	for _, tt := range tests {
		if got := telemetry.RedactString(tt.in); got != tt.want {
			t.Errorf("RedactString(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLoggerFormat(t *testing.T) {
	t.Parallel()
	if _, err := telemetry.NewLogger(&bytes.Buffer{}, "xml", nil); err == nil {
		t.Error("NewLogger accepted format xml")
	}
	var buf bytes.Buffer
	log, err := telemetry.NewLogger(&buf, "", slog.LevelWarn)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("dropped")
	log.Warn("kept")
	if got := buf.String(); strings.Contains(got, "dropped") || !strings.Contains(got, "level=WARN msg=kept") {
		t.Errorf("text output %q", got)
	}
}

// TestLoggerHandler runs the slog conformance suite on the handler.
func TestLoggerHandler(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log, err := telemetry.NewLogger(&buf, "json", slog.LevelDebug)
	if err != nil {
		t.Fatal(err)
	}
	results := func() []map[string]any {
		var ms []map[string]any
		for line := range bytes.Lines(buf.Bytes()) {
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatal(err)
			}
			ms = append(ms, m)
		}
		return ms
	}
	if err := slogtest.TestHandler(log.Handler(), results); err != nil {
		t.Error(err)
	}
}

func TestRunLog(t *testing.T) {
	t.Parallel()

	t.Run("StartedEnded", func(t *testing.T) {
		t.Parallel()
		_, b := setup(t, telemetry.Config{Traces: true}, network{})
		res, err := b.runner.Run(t.Context(), input, runner.WithThread("thread-7"))
		if err != nil {
			t.Fatal(err)
		}
		tr := b.logs.Records(t, "transfer")
		started, ended := b.logs.Records(t, "run started"), b.logs.Records(t, "run ended")
		if len(tr) != 1 || len(started) != 1 || len(ended) != 1 {
			t.Fatalf("%d transfer, %d started, %d ended lines; want 1, 1 and 1:\n%s", len(tr), len(started), len(ended), b.logs)
		}
		// The runner's transfer line.
		for k, want := range map[string]any{"run_id": res.RunID, "thread_id": "thread-7", "transfer_id": res.RunID + "-h1",
			"from": "triage", "to": "billing", "tokens_used": float64(usageLookup.Total() + usageTransfer.Total())} {
			if tr[0][k] != want {
				t.Errorf("transfer line %s = %v, want %v", k, tr[0][k], want)
			}
		}
		// The observer's lines carry the run span's ids once (the
		// handler adds none of its own).
		root := rootSpan(t, b.spans.GetSpans())
		traceID, spanID := root.SpanContext.TraceID().String(), root.SpanContext.SpanID().String()
		for k, want := range map[string]any{"run_id": res.RunID, "thread_id": "thread-7", "network": "support", "agent": "triage",
			"level": "INFO", "trace_id": traceID, "span_id": spanID} {
			if started[0][k] != want {
				t.Errorf("started line %s = %v, want %v", k, started[0][k], want)
			}
		}
		for k, want := range map[string]any{"run_id": res.RunID, "thread_id": "thread-7", "network": "support",
			"transfer_id": res.RunID + "-h1", "model_run_id": "scripted-billing-1", "status": "completed", "agent": "billing",
			"turns": 3.0, "transfers": 1.0, "tokens_used": float64(res.Usage.Total()),
			"input_tokens": float64(res.Usage.InputTokens), "output_tokens": float64(res.Usage.OutputTokens),
			"level": "INFO", "trace_id": traceID, "span_id": spanID} {
			if ended[0][k] != want {
				t.Errorf("ended line %s = %v, want %v", k, ended[0][k], want)
			}
		}
		if _, ok := ended[0]["duration_ms"].(float64); !ok {
			t.Errorf("ended line has no duration_ms: %v", ended[0])
		}
		for _, line := range strings.Split(strings.TrimSpace(b.logs.String()), "\n") {
			if strings.Count(line, `"trace_id"`) > 1 {
				t.Errorf("a line carries trace_id twice: %s", line)
			}
		}
	})

	t.Run("NoTracing", func(t *testing.T) {
		t.Parallel()
		_, b := setup(t, telemetry.Config{}, network{})
		if _, err := b.runner.Run(t.Context(), input); err != nil {
			t.Fatal(err)
		}
		for _, msg := range []string{"run started", "run ended"} {
			lines := b.logs.Records(t, msg)
			if len(lines) != 1 {
				t.Fatalf("%d %q lines", len(lines), msg)
			}
			if _, ok := lines[0]["trace_id"]; ok {
				t.Errorf("%s: a trace id without tracing: %v", msg, lines[0])
			}
		}
	})

	t.Run("AnyHandler", func(t *testing.T) {
		// A logger of the caller's own, not one of NewLogger: the lines
		// still carry the trace id, and nothing else is logged.
		t.Parallel()
		spans := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
		tel, err := telemetry.New(telemetry.Config{TracerProvider: tp})
		if err != nil {
			t.Fatal(err)
		}
		log, buf := logtest.New()
		r, err := runner.New(runner.Config{Network: network{}.build(t), Observer: tel.LoggingObserver(log)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Run(t.Context(), input)
		if err != nil {
			t.Fatal(err)
		}
		root := rootSpan(t, spans.GetSpans())
		for _, msg := range []string{"run started", "run ended"} {
			lines := buf.Records(t, msg)
			if len(lines) != 1 || lines[0]["run_id"] != res.RunID || lines[0]["trace_id"] != root.SpanContext.TraceID().String() {
				t.Errorf("%s lines %v, want one of run %s in trace %s", msg, lines, res.RunID, root.SpanContext.TraceID())
			}
		}
	})

	t.Run("LogOnly", func(t *testing.T) {
		// A nil Telemetry with a logger: no spans, the lines only; a
		// logger at Warn: the lines of completed runs are not written.
		t.Parallel()
		var tel *telemetry.Telemetry
		log, buf := logtest.New()
		warn := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
		for _, l := range []*slog.Logger{log, warn} {
			r, err := runner.New(runner.Config{Network: network{}.build(t), Observer: tel.LoggingObserver(l)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Run(t.Context(), input); err != nil {
				t.Fatal(err)
			}
		}
		if s, e := buf.Records(t, "run started"), buf.Records(t, "run ended"); len(s) != 1 || len(e) != 1 {
			t.Errorf("%d started and %d ended lines, want 1 and 1 (the Info logger's):\n%s", len(s), len(e), buf)
		}
		if tel.LoggingObserver(nil) != nil {
			t.Error("LoggingObserver(nil) of a nil Telemetry is not nil")
		}
	})

	t.Run("FailureRedacted", func(t *testing.T) {
		t.Parallel()
		_, b := setup(t, telemetry.Config{}, network{billingSteps: []scripted.Step{
			{Fail: &scripted.Fail{Status: 401, Message: "incorrect API key provided: " + openAIKey}},
		}})
		_, err := b.runner.Run(t.Context(), input)
		if err == nil {
			t.Fatal("run succeeded")
		}
		sum := b.logs.Records(t, "run ended")
		if len(sum) != 1 {
			t.Fatalf("%d ended lines", len(sum))
		}
		if sum[0]["level"] != "ERROR" || sum[0]["status"] != "failed" || sum[0]["error_kind"] != string(runner.KindOf(err)) {
			t.Errorf("ended line %v", sum[0])
		}
		if s, _ := sum[0]["error"].(string); !strings.Contains(s, telemetry.Redacted) {
			t.Errorf("error %q is not redacted", s)
		}
		if strings.Contains(b.logs.String(), openAIKey) {
			t.Errorf("the log leaks the key:\n%s", b.logs)
		}
	})
}

func rootSpan(t *testing.T, spans tracetest.SpanStubs) tracetest.SpanStub {
	t.Helper()
	for _, s := range spans {
		if !s.Parent.IsValid() {
			return s
		}
	}
	t.Fatal("no root span")
	return tracetest.SpanStub{}
}

func TestRedactAttr(t *testing.T) {
	t.Parallel()
	err := errors.New("boom " + openAIKey)
	a := telemetry.Redact(nil, slog.Any("err", err))
	if a.Value.String() != "boom "+telemetry.Redacted {
		t.Errorf("Redact(error) = %v", a.Value)
	}
	if a := telemetry.Redact([]string{"credentials"}, slog.String("user", "bob")); a.Value.String() != telemetry.Redacted {
		t.Errorf("Redact in a sensitive group = %v", a.Value)
	}
	if a := telemetry.Redact(nil, slog.Int("input_tokens", 3)); a.Value.Int64() != 3 {
		t.Errorf("Redact(input_tokens) = %v", a.Value)
	}
}
