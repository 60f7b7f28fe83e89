package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/otlptest"
)

// TestLogsJoinTraces: an operator joins a run's log lines to its trace.
// `baton serve --workers 0` and a `baton worker`, both with --log-format
// json, export their spans to an OTLP/HTTP receiver on loopback; a turn
// whose slow call goes to the worker leaves a "run started" and a "run
// ended" line in each process's log, all with the run's id:
//
//   - serve's lines carry the trace id and span id of serve's invoke_agent
//     span for the run (the request's trace);
//   - the worker's lines carry the trace id of the worker's trace — its
//     baton.continuation root and the resumed run's invoke_agent span
//     under it — and, as linked_trace_id, the request's trace, which the
//     continuation span links to.
func TestLogsJoinTraces(t *testing.T) {
	batonBin(t)
	eachBackend(t, func(t *testing.T, be backend) {
		rcv := otlptest.New(t)
		c := startCluster(t, be.open(t), newEffects(t, nil), clusterConfig{serveWorkers: 0, workers: 1, workerSlots: 1,
			flags: []string{"--log-format", "json"},
			env:   []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL, "OTEL_BSP_SCHEDULE_DELAY=100"}})
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		thread, err := c.api.createThread(ctx)
		if err != nil {
			t.Fatal(err)
		}
		run, evs, err := c.api.stream(ctx, thread, "[transfer] My parcel of order 1234 arrived damaged.", nil, nil)
		if err != nil || !completed(evs) {
			t.Fatalf("run %s: %v, events %+v", run, err, evs)
		}

		// The lines and spans of the run, once both processes have
		// logged its end and exported its spans.
		var serveLines, workerLines map[string]logLine
		var reqRun, workRun, cont otlptest.Span
		waitUntil(ctx, t, 30*time.Second, 50*time.Millisecond, func() bool {
			serveLines, workerLines = runLines(t, c.serve.logPath, run), runLines(t, c.workers[0].logPath, run)
			reqRun, workRun, cont = runSpans(rcv.Spans(), run)
			return len(serveLines) == 2 && len(workerLines) == 2 && reqRun.Name != "" && workRun.Name != "" && cont.Name != ""
		}, func() string {
			return fmt.Sprintf("after 30s: serve's lines %v, worker's lines %v; spans: request %+v, worker %+v, continuation %+v",
				serveLines, workerLines, reqRun, workRun, cont)
		})
		if err := rcv.Err(); err != nil {
			t.Fatal(err)
		}

		// The spans as the continuation made them: a new trace in the
		// worker, linked to the request's invoke_agent span.
		if workRun.TraceID != cont.TraceID || workRun.ParentSpanID != cont.SpanID || cont.ParentSpanID != "" {
			t.Errorf("worker spans: run %+v, continuation %+v; want the run under the continuation root", workRun, cont)
		}
		if cont.TraceID == reqRun.TraceID || len(cont.Links) != 1 || cont.Links[0] != (otlptest.Link{TraceID: reqRun.TraceID, SpanID: reqRun.SpanID}) {
			t.Errorf("continuation %+v: want a new trace linked to the request's span %s/%s", cont, reqRun.TraceID, reqRun.SpanID)
		}

		// serve's lines: the request's trace.
		for msg, l := range serveLines {
			if l.TraceID != reqRun.TraceID || l.SpanID != reqRun.SpanID || l.LinkedTraceID != "" || l.Resumed || l.ThreadID != thread || l.Network != "shop" {
				t.Errorf("serve %q: %+v; want trace %s span %s of thread %s", msg, l, reqRun.TraceID, reqRun.SpanID, thread)
			}
		}
		if l := serveLines["run ended"]; l.Status != "suspended" || l.TokensUsed == nil || l.DurationMS == nil || l.Agent != "shipping" {
			t.Errorf("serve's run ended: %+v; want suspended by shipping, with tokens and duration", l)
		}
		// The worker's lines: its own trace, linked to the request's.
		for msg, l := range workerLines {
			if l.TraceID != workRun.TraceID || l.SpanID != workRun.SpanID || l.LinkedTraceID != reqRun.TraceID || !l.Resumed || l.ThreadID != thread {
				t.Errorf("worker %q: %+v; want trace %s span %s linked to %s", msg, l, workRun.TraceID, workRun.SpanID, reqRun.TraceID)
			}
		}
		if l := workerLines["run ended"]; l.Status != "completed" || l.TokensUsed == nil || l.DurationMS == nil {
			t.Errorf("worker's run ended: %+v; want completed, with tokens and duration", l)
		}
		t.Logf("run %s: serve's lines in trace %s, the worker's in trace %s linked to it", run, reqRun.TraceID, workRun.TraceID)
	})
}

// logLine is the part of a run log line the test checks.
type logLine struct {
	Msg           string   `json:"msg"`
	Level         string   `json:"level"`
	RunID         string   `json:"run_id"`
	ThreadID      string   `json:"thread_id"`
	Network       string   `json:"network"`
	Agent         string   `json:"agent"`
	Status        string   `json:"status"`
	Resumed       bool     `json:"resumed"`
	TokensUsed    *int64   `json:"tokens_used"`
	DurationMS    *float64 `json:"duration_ms"`
	TraceID       string   `json:"trace_id"`
	SpanID        string   `json:"span_id"`
	LinkedTraceID string   `json:"linked_trace_id"`
}

// runLines reads a process's log (JSON lines among the harness's own) and
// returns its "run started" and "run ended" lines of run, by message. A
// message logged twice for the run fails t.
func runLines(t *testing.T, path, run string) map[string]logLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]logLine{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), "{") {
			continue // the harness's lines, serve's "listening on"
		}
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: a log line that is not JSON: %q: %v", path, sc.Text(), err)
		}
		if l.RunID != run || (l.Msg != "run started" && l.Msg != "run ended") {
			continue
		}
		if _, dup := out[l.Msg]; dup {
			t.Fatalf("%s: %q logged twice for run %s", path, l.Msg, run)
		}
		if l.Level != "INFO" {
			t.Errorf("%s: %q at %s, want INFO", path, l.Msg, l.Level)
		}
		out[l.Msg] = l
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// runSpans finds run's spans among those received: the request's
// invoke_agent span, the resumed run's, and the continuation span above
// the latter.
func runSpans(spans []otlptest.Span, run string) (req, resumed, cont otlptest.Span) {
	byID := map[string]otlptest.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	for _, s := range spans {
		if !strings.HasPrefix(s.Name, "invoke_agent ") || s.Attrs["baton.run_id"] != run {
			continue
		}
		if s.Attrs["baton.run.resumed"] == "true" {
			resumed = s
			if p, ok := byID[s.ParentSpanID]; ok && p.Name == "baton.continuation" {
				cont = p
			}
		} else {
			req = s
		}
	}
	return req, resumed, cont
}

func (l logLine) String() string {
	return fmt.Sprintf("%s run=%s status=%s trace=%s span=%s linked=%s resumed=%v", l.Msg, l.RunID, l.Status, l.TraceID, l.SpanID, l.LinkedTraceID, l.Resumed)
}
