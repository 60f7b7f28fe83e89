package telemetry

import (
	"context"
	"testing"
	"time"
)

func TestFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		want    Config
		wantErr bool
	}{
		{"Unset", nil, Config{Metrics: true}, false},
		{"Endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, Config{Traces: true, Metrics: true}, false},
		{"TracesEndpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, Config{Traces: true, Metrics: true}, false},
		{"ExporterOTLP", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, Config{Traces: true, Metrics: true}, false},
		{"ExporterNone", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, Config{Metrics: true}, false},
		{"SDKDisabled", map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "otlp"}, Config{}, false},
		{"SDKDisabledFalse", map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_TRACES_EXPORTER": "otlp"}, Config{Traces: true, Metrics: true}, false},
		{"MetricsNone", map[string]string{"OTEL_METRICS_EXPORTER": "none"}, Config{}, false},
		{"MetricsPrometheus", map[string]string{"OTEL_METRICS_EXPORTER": "prometheus"}, Config{Metrics: true}, false},
		{"ServiceName", map[string]string{"OTEL_SERVICE_NAME": "baton-worker"}, Config{ServiceName: "baton-worker", Metrics: true}, false},
		{"HTTPProtobuf", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, Config{Traces: true, Metrics: true}, false},
		{"GRPC", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, Config{}, true},
		{"TracesProtocolWins", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, Config{Traces: true, Metrics: true}, false},
		{"Zipkin", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, Config{}, true},
		{"MetricsOTLP", map[string]string{"OTEL_METRICS_EXPORTER": "otlp"}, Config{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := fromEnv(func(k string) string { return tt.env[k] })
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestNewOTLP builds the OTLP exporter from the environment; nothing is
// sent, so no collector is needed.
func TestNewOTLP(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_SERVICE_NAME", "baton-test")
	cfg, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	tel, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !tel.TracingEnabled() || !tel.MetricsEnabled() || tel.Observer() == nil {
		t.Fatal("tracing or metrics off")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		t.Error(err)
	}
}

func TestSplitModel(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, provider, model string }{
		{"openai:gpt-4o", "openai", "gpt-4o"},
		{"openai-responses:o3", "openai", "o3"},
		{"anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"},
		{"openai-compatible:llama3.1", "openai-compatible", "llama3.1"},
		{"scripted", "scripted", "scripted"},
		{"gpt-4o", "unknown", "gpt-4o"},
		{"", "unknown", "unknown"},
	}
	for _, tt := range tests {
		if p, m := splitModel(tt.name); p != tt.provider || m != tt.model {
			t.Errorf("splitModel(%q) = %q, %q; want %q, %q", tt.name, p, m, tt.provider, tt.model)
		}
	}
}

func TestSensitiveKey(t *testing.T) {
	t.Parallel()
	for k, want := range map[string]bool{
		"api_key": true, "OPENAI_API_KEY": true, "apiKey": true, "x-api-key": true, "Authorization": true,
		"password": true, "client_secret": true, "token": true, "access_token": true, "refreshToken": true,
		"X-Auth-Token": true, "cookie": true, "credentials": true, "auth": true, "private_key": true,
		"tokens_used": false, "input_tokens": false, "output_tokens": false, "max_tokens": false, "tokens": false,
		"transfer_id": false, "handoff_id": false, "model_run_id": false, "key": false, "author": false, "tokenizer": false,
	} {
		if got := sensitiveKey(k); got != want {
			t.Errorf("sensitiveKey(%q) = %v, want %v", k, got, want)
		}
	}
}
