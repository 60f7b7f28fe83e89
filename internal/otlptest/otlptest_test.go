package otlptest

import (
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The SDK's OTLP/HTTP exporter, plain and gzip-compressed, exports to the
// receiver: names, ids, parents, attributes and links arrive as they were.
func TestReceiver(t *testing.T) {
	t.Parallel()
	for _, compression := range []otlptracehttp.Compression{otlptracehttp.NoCompression, otlptracehttp.GzipCompression} {
		r := New(t)
		exp, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpointURL(r.URL+"/v1/traces"), otlptracehttp.WithCompression(compression))
		if err != nil {
			t.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		tr := tp.Tracer("test")
		_, other := tr.Start(t.Context(), "other")
		other.End()
		ctx, root := tr.Start(t.Context(), "root", trace.WithAttributes(attribute.String("baton.run_id", "run_1"), attribute.Bool("baton.run.resumed", true)),
			trace.WithLinks(trace.Link{SpanContext: other.SpanContext()}))
		_, child := tr.Start(ctx, "child")
		child.End()
		root.End()
		if err := tp.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		byName := map[string]Span{}
		for _, s := range r.Spans() {
			byName[s.Name] = s
		}
		got, gotChild := byName["root"], byName["child"]
		if got.TraceID != root.SpanContext().TraceID().String() || got.SpanID != root.SpanContext().SpanID().String() || got.ParentSpanID != "" {
			t.Errorf("compression %d: root %+v, want trace %s span %s", compression, got, root.SpanContext().TraceID(), root.SpanContext().SpanID())
		}
		if gotChild.ParentSpanID != got.SpanID || gotChild.TraceID != got.TraceID {
			t.Errorf("compression %d: child %+v, want under %s", compression, gotChild, got.SpanID)
		}
		if got.Attrs["baton.run_id"] != "run_1" || got.Attrs["baton.run.resumed"] != "true" {
			t.Errorf("compression %d: attributes %v", compression, got.Attrs)
		}
		if len(got.Links) != 1 || got.Links[0].TraceID != other.SpanContext().TraceID().String() {
			t.Errorf("compression %d: links %v, want one to %s", compression, got.Links, other.SpanContext().TraceID())
		}
	}
}

// What is not an OTLP/HTTP protobuf export is refused and remembered.
func TestReceiverRefuses(t *testing.T) {
	t.Parallel()
	r := New(t)
	resp, err := http.Post(r.URL+"/v1/traces", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || r.Err() == nil {
		t.Errorf("JSON export: %d, err %v; want 400 and an error", resp.StatusCode, r.Err())
	}
	resp, err = http.Post(r.URL+"/v1/traces", "application/x-protobuf", strings.NewReader("\xff\xff"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("garbage: %d, want 400", resp.StatusCode)
	}
}
