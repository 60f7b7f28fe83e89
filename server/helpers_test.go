package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
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

// bundle is what a test gets from setup.
type bundle struct {
	srv  *server.Server
	svc  *service.Service
	http *httptest.Server
	st   store.Store
	keyA string // owner "alice"
	keyB string // owner "bob"
	url  string
	cfg  server.Config
}

// options are the service's and the server's configs of a test.
type options struct {
	service service.Config
	server  server.Config
}

type cfgOption func(*options)

// withServer adjusts the server's config.
func withServer(f func(c *server.Config)) cfgOption { return func(o *options) { f(&o.server) } }

// withNetworks adds example networks to support and research.
func withNetworks(t testing.TB, names ...string) cfgOption {
	return func(o *options) {
		for _, n := range names {
			o.service.Networks = append(o.service.Networks, loadNetwork(t, n))
		}
	}
}

func loadNetwork(t testing.TB, name string) service.Definition {
	t.Helper()
	spec, err := netspec.Load(filepath.Join("..", "examples", name, "network.yaml"), netspec.Options{})
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return service.DefinitionOf(spec)
}

func setup(t testing.TB, opts ...cfgOption) *bundle {
	t.Helper()
	return setupStore(t, testdb.SQLite(t), opts...)
}

// setupStore serves the support and research networks on st, with River's
// workers in the process (short timings), like `baton serve`.
func setupStore(t testing.TB, st store.Store, opts ...cfgOption) *bundle {
	t.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	o := options{
		service: service.Config{Store: st, Networks: []service.Definition{loadNetwork(t, "support"), loadNetwork(t, "research")},
			Workers: 4, Adopt: true, Logger: quiet,
			Continuation: continuation.Config{JobTimeout: 10 * time.Second, FetchCooldown: 20 * time.Millisecond, FetchPollInterval: 100 * time.Millisecond}},
		server: server.Config{KeyCacheTTL: -1, Logger: quiet, FollowInterval: 100 * time.Millisecond},
	}
	for _, f := range opts {
		f(&o)
	}
	svc, err := service.Open(ctx, o.service)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := o.server
	cfg.Service = svc
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
	b := &bundle{srv: srv, svc: svc, http: hs, st: st, url: hs.URL, cfg: cfg}
	b.keyA = newKey(t, st, "alice")
	b.keyB = newKey(t, st, "bob")
	return b
}

func newKey(t testing.TB, st store.Store, owner string) string {
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

// response is a decoded HTTP response.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// errType returns the error type of an error body.
func (r *response) errType(t testing.TB) string {
	t.Helper()
	var e struct {
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Type == "" || e.Error.Message == "" {
		t.Fatalf("status %d: not an error body: %s", r.status, r.body)
	}
	return e.Error.Type
}

// request returns a request of key (none when "") with body (nil, a string,
// bytes or a value sent as JSON) and hdr, header names and values.
func (b *bundle) request(t testing.TB, key, method, path string, body any, hdr ...string) *http.Request {
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
	req, err := http.NewRequestWithContext(t.Context(), method, b.url+path, rd)
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

func (b *bundle) do(t testing.TB, key, method, path string, body any, hdr ...string) *response {
	t.Helper()
	resp, err := http.DefaultClient.Do(b.request(t, key, method, path, body, hdr...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: data}
}

// thread creates a thread of network for key and returns its id.
func (b *bundle) thread(t testing.TB, key, network string) string {
	t.Helper()
	r := b.do(t, key, "POST", "/v1/threads", map[string]any{"network": network})
	if r.status != http.StatusCreated {
		t.Fatalf("create thread: %d %s", r.status, r.body)
	}
	var th struct{ ID string }
	r.json(t, &th)
	return th.ID
}

// handOff runs a turn of input on thread, then proposes and approves its
// thread handoff, and returns the child thread and the agent whose memory
// holds the summary.
func (b *bundle) handOff(t testing.TB, thread, input string) (child, assistant string) {
	t.Helper()
	if r := b.do(t, b.keyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": input}); r.status != 200 {
		t.Fatalf("run: %d %s", r.status, r.body)
	}
	r := b.do(t, b.keyA, "POST", "/v1/threads/"+thread+"/handoff", nil)
	var in struct {
		ID string `json:"interrupt_id"`
	}
	r.json(t, &in)
	if r.status != http.StatusCreated || in.ID == "" {
		t.Fatalf("propose: %d %s", r.status, r.body)
	}
	r = b.do(t, b.keyA, "POST", "/v1/interrupts/"+in.ID+"/decision", map[string]any{"decisions": []any{map[string]any{"type": "approve"}}})
	var out struct {
		Child     string `json:"child_thread_id"`
		Assistant string `json:"assistant_id"`
	}
	r.json(t, &out)
	if r.status != 200 || out.Child == "" {
		t.Fatalf("approve: %d %s", r.status, r.body)
	}
	return out.Child, out.Assistant
}

// seed returns the thread handoff flags of a child thread: both are set
// until its first turn completes.
func (b *bundle) seed(t testing.TB, child string) (cleanup, pending bool) {
	t.Helper()
	var th struct {
		Metadata struct {
			Handoff struct {
				CleanupRequired bool `json:"cleanup_required"`
				Pending         bool `json:"pending"`
			} `json:"handoff"`
		} `json:"metadata"`
	}
	b.do(t, b.keyA, "GET", "/v1/threads/"+child, nil).json(t, &th)
	return th.Metadata.Handoff.CleanupRequired, th.Metadata.Handoff.Pending
}

// event is an SSE event with its JSON.
type event struct {
	ID, Type string
	Data     map[string]any
	Raw      string
}

// stream opens an SSE request and returns its events as they come.
func (b *bundle) stream(t testing.TB, key, method, path string, body any, hdr ...string) (*http.Response, <-chan event) {
	t.Helper()
	resp, err := http.DefaultClient.Do(b.request(t, key, method, path, body, append([]string{"Accept", "text/event-stream"}, hdr...)...))
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan event, 1024)
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
			e := event{ID: ev.ID, Type: ev.Type, Raw: string(ev.Data)}
			_ = json.Unmarshal(ev.Data, &e.Data)
			ch <- e
		}
	}()
	return resp, ch
}

// collect reads events until the channel closes or stop returns true.
func collect(t testing.TB, ch <-chan event, stop func(event) bool) []event {
	t.Helper()
	var out []event
	timeout := time.After(30 * time.Second)
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
			t.Fatalf("timed out after %d events: %v", len(out), types(out))
		}
	}
}

func types(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}
