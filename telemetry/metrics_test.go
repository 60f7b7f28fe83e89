package telemetry_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/telemetry"
)

// scrape GETs /metrics from h and parses the text exposition.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// sample returns the metric of family name whose labels are exactly labels,
// or nil.
func sample(fams map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for _, l := range m.GetLabel() {
			if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
				continue next
			}
		}
		return m
	}
	return nil
}

// value is the counter or gauge value of a sample, or the count of a
// histogram; -1 when the sample is missing.
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	m := sample(fams, name, labels)
	switch {
	case m == nil:
		return -1
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return -1
}

func TestMetricsScrape(t *testing.T) {
	t.Parallel()
	tel, b := setup(t, telemetry.Config{Metrics: true}, network{})
	ctx := t.Context()
	if _, err := b.runner.Run(ctx, input, runner.WithThread("thread-1")); err != nil {
		t.Fatal(err)
	}
	tel.StreamOpened(ctx)
	tel.StreamOpened(ctx)
	tel.StreamClosed(ctx)
	tel.RecordContinuationLatency(ctx, 1500*time.Millisecond)
	tel.RecordError(ctx, "stream_write")
	unregister, err := tel.RegisterQueueDepth(func(context.Context) (map[string]int64, error) {
		return map[string]int64{"default": 3, "slow": 1}, nil
	})
	if err != nil {
		t.Fatal(err)
	}

	fams := scrape(t, tel.MetricsHandler())
	scripted := map[string]string{"provider": "scripted", "model": "scripted"}
	with := func(base map[string]string, k, v string) map[string]string {
		m := map[string]string{k: v}
		for k, v := range base {
			m[k] = v
		}
		return m
	}
	anthropic := map[string]string{"provider": "anthropic", "model": "claude-sonnet-4-5"}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"baton_transfers_total", map[string]string{"from": "triage", "to": "billing", "type": "transfer", "outcome": "ok"}, 1},
		{"baton_model_calls_total", with(scripted, "outcome", "ok"), 2},
		{"baton_model_calls_total", with(anthropic, "outcome", "ok"), 1},
		{"baton_model_call_duration_seconds", with(scripted, "outcome", "ok"), 2},
		{"baton_model_call_duration_seconds", with(anthropic, "outcome", "ok"), 1},
		{"baton_tokens_total", with(scripted, "direction", "input"), float64(usageLookup.InputTokens + usageTransfer.InputTokens)},
		{"baton_tokens_total", with(scripted, "direction", "output"), float64(usageLookup.OutputTokens + usageTransfer.OutputTokens)},
		{"baton_tokens_total", with(anthropic, "direction", "input"), float64(usageAnswer.InputTokens)},
		{"baton_tokens_total", with(anthropic, "direction", "output"), float64(usageAnswer.OutputTokens)},
		{"baton_tool_calls_total", map[string]string{"tool": "lookup_account", "outcome": "ok"}, 1},
		{"baton_tool_call_duration_seconds", map[string]string{"tool": "lookup_account"}, 1},
		{"baton_runs_total", map[string]string{"status": "completed"}, 1},
		{"baton_errors_total", map[string]string{"kind": "stream_write"}, 1},
		{"baton_open_streams", map[string]string{}, 1},
		{"baton_job_queue_depth", map[string]string{"queue": "default"}, 3},
		{"baton_job_queue_depth", map[string]string{"queue": "slow"}, 1},
		{"baton_continuation_latency_seconds", map[string]string{}, 1},
	}
	for _, c := range checks {
		if got := value(fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if m := sample(fams, "baton_continuation_latency_seconds", map[string]string{}); m == nil || m.Histogram.GetSampleSum() != 1.5 {
		t.Errorf("continuation latency sum: %v", m)
	}
	if fams["go_goroutines"] == nil || fams["target_info"] == nil {
		t.Error("no Go runtime collector or target_info")
	}

	// Labels stay low-cardinality: no ids.
	allowed := map[string]bool{"from": true, "to": true, "type": true, "outcome": true, "provider": true, "model": true,
		"direction": true, "tool": true, "status": true, "kind": true, "queue": true, "le": true}
	for name, f := range fams {
		if !strings.HasPrefix(name, "baton_") {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if !allowed[l.GetName()] {
					t.Errorf("%s has label %s=%q", name, l.GetName(), l.GetValue())
				}
			}
		}
	}

	// Unregistered queue depth funcs are no longer called.
	if err := unregister(); err != nil {
		t.Fatal(err)
	}
	if got := value(scrape(t, tel.MetricsHandler()), "baton_job_queue_depth", map[string]string{"queue": "default"}); got != -1 {
		t.Errorf("queue depth after unregister = %v", got)
	}
}

func TestMetricsErrors(t *testing.T) {
	t.Parallel()
	tel, b := setup(t, telemetry.Config{Metrics: true}, network{billingSteps: []scripted.Step{{Fail: &scripted.Fail{Status: 400, Message: "bad request"}}}})
	_, err := b.runner.Run(t.Context(), input)
	if err == nil {
		t.Fatal("run succeeded")
	}
	fams := scrape(t, tel.MetricsHandler())
	kind := string(runner.KindOf(err))
	if got := value(fams, "baton_errors_total", map[string]string{"kind": kind}); got != 1 {
		t.Errorf("baton_errors_total{kind=%q} = %v, want 1", kind, got)
	}
	if got := value(fams, "baton_runs_total", map[string]string{"status": "failed"}); got != 1 {
		t.Errorf("baton_runs_total{status=failed} = %v, want 1", got)
	}
	if got := value(fams, "baton_model_calls_total", map[string]string{"provider": "anthropic", "model": "claude-sonnet-4-5", "outcome": "error"}); got != 1 {
		t.Errorf("failed model calls = %v, want 1", got)
	}

	// A queue depth func that fails does not break the scrape.
	unregister, err := tel.RegisterQueueDepth(func(context.Context) (map[string]int64, error) { return nil, errors.New("db down") })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unregister() }()
	if fams := scrape(t, tel.MetricsHandler()); fams["baton_runs_total"] == nil {
		t.Error("scrape lost metrics when a queue depth func failed")
	}
}
