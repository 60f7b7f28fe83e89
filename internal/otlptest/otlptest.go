// Package otlptest is an OTLP/HTTP trace receiver on loopback, for tests
// that run baton's processes with OTEL_EXPORTER_OTLP_ENDPOINT pointing at
// it and check the spans they export.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is what the receiver keeps of an exported span. Ids are lower-case
// hex, as in W3C Trace Context and baton's log lines; ParentSpanID is ""
// for a root.
type Span struct {
	Name         string
	TraceID      string
	SpanID       string
	ParentSpanID string
	// Attrs are the span's attributes, their values as strings
	// (fmt.Sprint of the OTLP value: "true", "42", …).
	Attrs map[string]string
	Links []Link
	// Service is the resource's service.name.
	Service string
}

// Link is a span's link to another span.
type Link struct{ TraceID, SpanID string }

// Receiver is an OTLP/HTTP receiver of traces (POST /v1/traces,
// application/x-protobuf, optionally gzip-compressed) on loopback. It is
// safe for concurrent use.
type Receiver struct {
	// URL is the base URL to give as OTEL_EXPORTER_OTLP_ENDPOINT.
	URL string

	mu    sync.Mutex
	spans []Span
	err   error
}

// New starts a receiver, closed when tb ends.
func New(tb testing.TB) *Receiver {
	tb.Helper()
	r := &Receiver{}
	srv := httptest.NewServer(r)
	tb.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// Spans returns the spans received so far, in the order received.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Err returns the first request the receiver could not decode, if any.
func (r *Receiver) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// ServeHTTP answers an export request.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	spans, err := decode(req)
	r.mu.Lock()
	if err != nil && r.err == nil {
		r.err = err
	}
	r.spans = append(r.spans, spans...)
	r.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// An empty ExportTraceServiceResponse: all accepted.
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// decode reads an ExportTraceServiceRequest. It is read as a TracesData,
// whose wire form is the same (field 1: repeated ResourceSpans), so that
// the collector's gRPC packages are not needed.
func decode(req *http.Request) ([]Span, error) {
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		return nil, fmt.Errorf("otlptest: content type %q, want application/x-protobuf", ct)
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			return nil, fmt.Errorf("otlptest: gzip: %w", err)
		}
		defer zr.Close()
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("otlptest: read: %w", err)
	}
	var data tracepb.TracesData
	if err := proto.Unmarshal(b, &data); err != nil {
		return nil, fmt.Errorf("otlptest: decode: %w", err)
	}
	var out []Span
	for _, rs := range data.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()), Attrs: attrs(s.GetAttributes()), Service: service}
				for _, l := range s.GetLinks() {
					sp.Links = append(sp.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId())})
				}
				out = append(out, sp)
			}
		}
	}
	return out, nil
}

// attrs returns OTLP attributes as strings.
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = fmt.Sprint(x.BoolValue)
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = fmt.Sprint(x.DoubleValue)
		default:
			m[kv.GetKey()] = v.String()
		}
	}
	return m
}
