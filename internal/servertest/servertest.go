// Package servertest serves baton's HTTP API to tests: a service on a real
// store with River's workers in the process, the server (core and the
// protocols a test mounts) on a loopback httptest server, two API keys of
// two owners, and helpers to send requests and read SSE streams.
package servertest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/netspec"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/store"
)

// Bundle is what a test gets from Setup.
type Bundle struct {
	Srv  *server.Server
	Svc  *service.Service
	HTTP *httptest.Server
	St   store.Store
	KeyA string // owner "alice"
	KeyB string // owner "bob"
	URL  string
	Cfg  server.Config
}

// Protocols are mounted on every server that Setup makes, beside the
// core's own routes: a test package sets them once (in an init function)
// to the protocols it tests.
var Protocols []server.Protocol

// Options are the service's and the server's configs of a test.
type Options struct {
	Service service.Config
	Server  server.Config
}

// Option adjusts the configs of a test.
type Option func(*Options)

// WithServer adjusts the server's config.
func WithServer(f func(c *server.Config)) Option { return func(o *Options) { f(&o.Server) } }

// WithNetworks adds example networks to support and research.
func WithNetworks(t testing.TB, names ...string) Option {
	return func(o *Options) {
		for _, n := range names {
			o.Service.Networks = append(o.Service.Networks, LoadNetwork(t, n))
		}
	}
}

// LoadNetwork loads the example network of a name (examples/NAME).
func LoadNetwork(t testing.TB, name string) service.Definition {
	t.Helper()
	spec, err := netspec.Load(filepath.Join(Root(), "examples", name, "network.yaml"), netspec.Options{})
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return service.DefinitionOf(spec)
}

// Root is the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Setup serves the support and research networks on a new SQLite store
// (see SetupStore).
func Setup(t testing.TB, opts ...Option) *Bundle {
	t.Helper()
	return SetupStore(t, testdb.SQLite(t), opts...)
}

// SetupStore serves the support and research networks on st, with River's
// workers in the process (short timings), like `baton serve`.
func SetupStore(t testing.TB, st store.Store, opts ...Option) *Bundle {
	t.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	o := Options{
		Service: service.Config{Store: st, Networks: []service.Definition{LoadNetwork(t, "support"), LoadNetwork(t, "research")},
			Workers: 4, Adopt: true, Logger: quiet,
			Continuation: continuation.Config{JobTimeout: 10 * time.Second, FetchCooldown: 20 * time.Millisecond, FetchPollInterval: 100 * time.Millisecond}},
		Server: server.Config{KeyCacheTTL: -1, Logger: quiet, FollowInterval: 100 * time.Millisecond},
	}
	for _, f := range opts {
		f(&o)
	}
	svc, err := service.Open(ctx, o.Service)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := o.Server
	cfg.Service = svc
	if cfg.Protocols == nil {
		cfg.Protocols = Protocols
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		hs.Close()
		_ = svc.Stop(sctx)
		_ = svc.Close()
	})
	b := &Bundle{Srv: srv, Svc: svc, HTTP: hs, St: st, URL: hs.URL, Cfg: cfg}
	b.KeyA = NewKey(t, st, "alice")
	b.KeyB = NewKey(t, st, "bob")
	return b
}

// NewKey creates an API key of owner (made if new) and returns its secret.
func NewKey(t testing.TB, st store.Store, owner string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := st.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: owner}); err != nil {
		t.Fatal(err)
	}
	k, err := st.CreateAPIKey(ctx, &store.CreateAPIKeyParams{OwnerID: owner, Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return k.Secret
}

// Response is a decoded HTTP response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// ErrType returns the error type of an error body.
func (r *Response) ErrType(t testing.TB) string {
	t.Helper()
	var e struct {
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal(r.Body, &e); err != nil || e.Error.Type == "" || e.Error.Message == "" {
		t.Fatalf("status %d: not an error body: %s", r.Status, r.Body)
	}
	return e.Error.Type
}

// Request returns a request of key (none when "") with body (nil, a string,
// bytes or a value sent as JSON) and hdr, header names and values.
func (b *Bundle) Request(t testing.TB, key, method, path string, body any, hdr ...string) *http.Request {
	t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	case []byte:
		rd = bytes.NewReader(v)
	default:
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, b.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return req
}

// Do sends the request of [Bundle.Request] and reads its answer.
func (b *Bundle) Do(t testing.TB, key, method, path string, body any, hdr ...string) *Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(b.Request(t, key, method, path, body, hdr...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// Thread creates a thread of network for key and returns its id.
func (b *Bundle) Thread(t testing.TB, key, network string) string {
	t.Helper()
	r := b.Do(t, key, "POST", "/v1/threads", map[string]any{"network": network})
	if r.Status != http.StatusCreated {
		t.Fatalf("create thread: %d %s", r.Status, r.Body)
	}
	var th struct{ ID string }
	r.JSON(t, &th)
	return th.ID
}

// HandOff runs a turn of input on thread, then proposes and approves its
// thread handoff, and returns the child thread and the agent whose memory
// holds the summary.
func (b *Bundle) HandOff(t testing.TB, thread, input string) (child, assistant string) {
	t.Helper()
	if r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": input}); r.Status != 200 {
		t.Fatalf("run: %d %s", r.Status, r.Body)
	}
	r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/handoff", nil)
	var in struct {
		ID string `json:"interrupt_id"`
	}
	r.JSON(t, &in)
	if r.Status != http.StatusCreated || in.ID == "" {
		t.Fatalf("propose: %d %s", r.Status, r.Body)
	}
	r = b.Do(t, b.KeyA, "POST", "/v1/interrupts/"+in.ID+"/decision", map[string]any{"decisions": []any{map[string]any{"type": "approve"}}})
	var out struct {
		Child     string `json:"child_thread_id"`
		Assistant string `json:"assistant_id"`
	}
	r.JSON(t, &out)
	if r.Status != 200 || out.Child == "" {
		t.Fatalf("approve: %d %s", r.Status, r.Body)
	}
	return out.Child, out.Assistant
}

// Seed returns the thread handoff flags of a child thread: both are set
// until its first turn completes.
func (b *Bundle) Seed(t testing.TB, child string) (cleanup, pending bool) {
	t.Helper()
	var th struct {
		Metadata struct {
			Handoff struct {
				CleanupRequired bool `json:"cleanup_required"`
				Pending         bool `json:"pending"`
			} `json:"handoff"`
		} `json:"metadata"`
	}
	b.Do(t, b.KeyA, "GET", "/v1/threads/"+child, nil).JSON(t, &th)
	return th.Metadata.Handoff.CleanupRequired, th.Metadata.Handoff.Pending
}

// Event is an SSE event with its JSON.
type Event struct {
	ID, Type string
	Data     map[string]any
	Raw      string
}

// Stream opens an SSE request and returns its events as they come.
func (b *Bundle) Stream(t testing.TB, key, method, path string, body any, hdr ...string) (*http.Response, <-chan Event) {
	t.Helper()
	resp, err := http.DefaultClient.Do(b.Request(t, key, method, path, body, append([]string{"Accept", "text/Event-stream"}, hdr...)...))
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan Event, 1024)
	if resp.StatusCode != http.StatusOK {
		close(ch)
		return resp, ch
	}
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		rd := sse.NewReader(resp.Body, 0)
		for {
			ev, err := rd.Next()
			if err != nil {
				return
			}
			e := Event{ID: ev.ID, Type: ev.Type, Raw: string(ev.Data)}
			_ = json.Unmarshal(ev.Data, &e.Data)
			ch <- e
		}
	}()
	return resp, ch
}

// Collect reads events until the channel closes or stop returns true.
func Collect(t testing.TB, ch <-chan Event, stop func(Event) bool) []Event {
	t.Helper()
	return CollectWithin(t, ch, stop, 30*time.Second)
}

// CollectWithin is Collect that fails the test after d instead of 30 s.
func CollectWithin(t testing.TB, ch <-chan Event, stop func(Event) bool, d time.Duration) []Event {
	t.Helper()
	var out []Event
	timeout := time.After(d)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, ev)
			if stop != nil && stop(ev) {
				return out
			}
		case <-timeout:
			t.Fatalf("timed out after %d events: %v", len(out), Types(out))
		}
	}
}

// Types returns the types of evs.
func Types(evs []Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// IDLess orders event ids: their dot-separated numbers compared in turn,
// an id before any longer one it starts (20 < 20.0.1 < 20.1).
func IDLess(a, b string) bool {
	pa, pb := splitID(a), splitID(b)
	for i := range min(len(pa), len(pb)) {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return len(pa) < len(pb)
}

func splitID(s string) []int {
	var out []int
	for p := range strings.SplitSeq(s, ".") {
		n, _ := strconv.Atoi(p)
		out = append(out, n)
	}
	return out
}

// FuzzServer is a served store per backend (testdb.Backends: SQLite, and
// PostgreSQL when BATON_TEST_DATABASE_URL is set), each with a support and
// a research thread of owner A, in the order of names.
type FuzzServer struct {
	names   []string
	bundles map[string]*Bundle
	threads map[string][2]string
}

// NewFuzzServer serves a support and a research thread of owner A on every
// backend.
func NewFuzzServer(f *testing.F) *FuzzServer {
	fs := &FuzzServer{bundles: map[string]*Bundle{}, threads: map[string][2]string{}}
	for name, open := range testdb.Backends(f) {
		b := SetupStore(f, open(f))
		fs.names = append(fs.names, name)
		fs.bundles[name] = b
		fs.threads[name] = [2]string{b.Thread(f, b.KeyA, "support"), b.Thread(f, b.KeyA, "research")}
	}
	slices.Sort(fs.names)
	return fs
}

// Send serves method path (with {support} and {research} replaced by the
// backend's threads) and body on every backend and checks each answer: never
// a 5xx other than 502 and 503, every error a JSON error body, and every
// backend answering a refused input (400) alike.
func (fs *FuzzServer) Send(t *testing.T, method, path string, body []byte) {
	t.Helper()
	codes := map[string]int{}
	for _, name := range fs.names {
		b := fs.bundles[name]
		p := strings.NewReplacer("{support}", fs.threads[name][0], "{research}", fs.threads[name][1]).Replace(path)
		req := httptest.NewRequest(method, "/", bytes.NewReader(body))
		raw, query, _ := strings.Cut(p, "?")
		req.URL = &url.URL{Path: mustUnescape(raw), RawPath: raw, RawQuery: query}
		req.RequestURI = p
		req.Header.Set("Authorization", "Bearer "+b.KeyA)
		rec := httptest.NewRecorder()
		b.Srv.ServeHTTP(rec, req)
		codes[name] = rec.Code
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable && rec.Code != http.StatusBadGateway {
			t.Fatalf("%s: %s %s %q: %d %s", name, method, p, body, rec.Code, rec.Body.Bytes())
		}
		if rec.Code >= 400 && rec.Code != http.StatusNotFound || rec.Code == http.StatusNotFound && strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			var e struct {
				Error struct{ Type, Message string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Type == "" || e.Error.Message == "" {
				t.Fatalf("%s: %s %s %q: %d with a body that is not a JSON error: %s", name, method, p, body, rec.Code, rec.Body.Bytes())
			}
		}
	}
	for _, name := range fs.names[1:] {
		a, z := codes[fs.names[0]], codes[name]
		if a != z && (a == http.StatusBadRequest || z == http.StatusBadRequest) {
			t.Fatalf("%s %s %q: %s answers %d, %s %d", method, path, body, fs.names[0], a, name, z)
		}
	}
}

// mustUnescape is the decoded path of an escaped one; an invalid escape is
// kept as written (the mux then answers it as it would).
func mustUnescape(p string) string {
	s, err := url.PathUnescape(p)
	if err != nil {
		return p
	}
	return s
}

// RunAnswer is what tests read of a run's JSON (the answer of POST
// /v1/threads/{id}/runs that does not stream): its id, its status and the
// interrupt it waits for.
type RunAnswer struct {
	ID        string
	Status    string
	Interrupt struct {
		ID string `json:"interrupt_id"`
	}
}

// Interrupted makes a thread of key whose run waits for an approval and
// returns the thread, run and interrupt ids.
func (b *Bundle) Interrupted(t testing.TB, key string) (thread, run, interrupt string) {
	t.Helper()
	thread = b.Thread(t, key, "support")
	r := b.Do(t, key, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "I want a refund for order 1234"})
	if r.Status != http.StatusOK {
		t.Fatalf("run: %d %s", r.Status, r.Body)
	}
	var res RunAnswer
	r.JSON(t, &res)
	if res.Status != "interrupted" || res.Interrupt.ID == "" {
		t.Fatalf("run: %s", r.Body)
	}
	return thread, res.ID, res.Interrupt.ID
}
