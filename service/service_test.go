package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/draft/pgbroker"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlitestore"
	"github.com/batonhq/baton/threads"
)

func example(name string) string { return filepath.Join("..", "examples", name, "network.yaml") }

// runStart returns the start event of the run a turn's events hold;
// events fails t with the first error unless failing is set, where an
// error (the run's failure) ends the turn.
func runStart(t *testing.T, events iter.Seq2[runner.Event, error], failing bool) *runner.RunStartEvent {
	t.Helper()
	var start *runner.RunStartEvent
	for ev, err := range events {
		if err != nil {
			if failing {
				break
			}
			t.Fatal(err)
		}
		if e, ok := ev.(*runner.RunStartEvent); ok {
			start = e
		}
	}
	if start == nil {
		t.Fatal("no run start")
	}
	return start
}

// TestOpen: one database gives the store, its broker (in-process on SQLite,
// LISTEN/NOTIFY on PostgreSQL) and River; every network gets its queue,
// its runner, its threads, its thread handoffs and its continuation, and a
// turn runs through them on both backends.
func TestOpen(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		ctx := t.Context()
		st := open(t)
		svc, err := service.Open(ctx, service.Config{Store: st, Files: []string{example("support"), example("research")}, Workers: 1, Adopt: true})
		if err != nil {
			t.Fatal(err)
		}
		switch br := svc.Broker().(type) {
		case *draft.Hub:
			if _, ok := st.(*sqlitestore.Store); !ok {
				t.Errorf("broker %T on %T", br, st)
			}
		case *pgbroker.Broker:
			if _, ok := st.(*sqlitestore.Store); ok {
				t.Errorf("broker %T on SQLite", br)
			}
		default:
			t.Errorf("broker %T", br)
		}
		if err := svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := svc.Stop(sctx); err != nil {
				t.Error(err)
			}
			if err := svc.Close(); err != nil {
				t.Error(err)
			}
		}()
		var names []string
		for _, n := range svc.Networks() {
			names = append(names, n.Name())
			if n.Runner == nil || n.Threads == nil || n.ThreadHandoff == nil || n.Continuation == nil {
				t.Fatalf("network %s is not assembled: %+v", n.Name(), n)
			}
		}
		if strings.Join(names, ",") != "research,support" {
			t.Errorf("networks %v, want research and support by name", names)
		}
		n, ok := svc.Network("support")
		if !ok {
			t.Fatal("no support network")
		}
		var end *runner.RunEndEvent
		for ev, err := range n.Threads.Turn(ctx, "ann", "I was charged twice for order 1234", threads.TurnOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			if e, ok := ev.(*runner.RunEndEvent); ok {
				end = e
			}
		}
		if end == nil || end.Status != runstate.StatusCompleted || end.LastAgent != "billing" {
			t.Fatalf("turn ended %+v, want completed by billing", end)
		}
		// The run's lease was taken by its first checkpoint and released
		// by its last: nothing is left to adopt.
		if _, err := st.GetLease(ctx, &store.GetLeaseParams{OwnerID: "ann", RunID: "x"}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("lease lookup: %v", err)
		}
		leases, err := st.ExpiredLeases(ctx, &store.ExpiredLeasesParams{})
		if err != nil || len(leases) != 0 {
			t.Errorf("leases left: %v, %v", leases, err)
		}
	})
}

// TestOpenRefuses: no network, a network twice, a tool implementation for
// a tool the file does not declare, a bad database URL.
func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := testdb.SQLite(t)
	for name, tc := range map[string]struct {
		cfg  service.Config
		want string
	}{
		"NoNetwork": {service.Config{Store: st}, "no network"},
		"Twice":     {service.Config{Store: st, Files: []string{example("support"), example("support")}}, "given twice"},
		"UnknownTool": {service.Config{Store: st, Files: []string{example("support")},
			Load: service.LoadOptions{HTTPTools: map[string]string{"nope": "http://127.0.0.1:1"}}}, "declares no tool"},
		"BadURL": {service.Config{Database: "mysql://u@h/db", Files: []string{example("support")}}, `unknown scheme "mysql"`},
	} {
		t.Run(name, func(t *testing.T) {
			svc, err := service.Open(ctx, tc.cfg)
			if err == nil {
				svc.Close()
				t.Fatalf("opened; want an error with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want %q", err, tc.want)
			}
		})
	}
	if _, err := service.Load(example("support"), service.LoadOptions{HTTPTools: map[string]string{"nope": "http://x"}}); !errors.Is(err, service.ErrUnknownTool) {
		t.Errorf("Load with an unknown HTTP tool: %v, want ErrUnknownTool", err)
	}
}

// TestQueueName: every process derives the same queue from a network's
// name, and the service gives it to the network's continuation.
func TestQueueName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"support": "baton_support", "Support Desk!": "baton_support_desk", "a--b": "baton_a_b"} {
		if got := continuation.QueueName(in); got != want {
			t.Errorf("QueueName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestHTTPTool: the call's idempotency key and ids travel as headers; a
// 2xx body is the result; 429 and 5xx are transient (Retry-After kept); a
// 4xx is an error the model sees.
func TestHTTPTool(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []http.Header
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Header.Clone())
		code := status
		mu.Unlock()
		if code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "3")
		}
		w.WriteHeader(code)
		w.Write(body)
	}))
	defer srv.Close()
	tool := service.HTTPTool("lookup", srv.URL, srv.Client())
	ctx := agent.WithCall(t.Context(), &agent.CallInfo{RunID: "run_a", CallID: "call_1", IdempotencyKey: "run_a:call_1"})
	out, err := tool(ctx, json.RawMessage(`{"order":"1234"}`))
	if err != nil || out != `{"order":"1234"}` {
		t.Fatalf("result %q, %v", out, err)
	}
	if h := got[0]; h.Get("Idempotency-Key") != "run_a:call_1" || h.Get("Baton-Run-Id") != "run_a" || h.Get("Baton-Call-Id") != "call_1" {
		t.Errorf("headers %v", h)
	}
	for code, transient := range map[int]bool{http.StatusTooManyRequests: true, http.StatusBadGateway: true, http.StatusBadRequest: false} {
		mu.Lock()
		status = code
		mu.Unlock()
		_, err := tool(ctx, json.RawMessage(`{}`))
		var te interface {
			Temporary() bool
			RetryDelay() time.Duration
		}
		if err == nil || errors.As(err, &te) != transient {
			t.Errorf("HTTP %d: %v (%T), transient %v", code, err, err, transient)
		}
		if code == http.StatusTooManyRequests && te != nil && te.RetryDelay() != 3*time.Second {
			t.Errorf("Retry-After %s, want 3s", te.RetryDelay())
		}
	}
	for _, bad := range []string{"lookup", "=http://x", "lookup=ftp://x"} {
		if _, _, err := service.ParseHTTPTool(bad); err == nil {
			t.Errorf("ParseHTTPTool(%q) accepted", bad)
		}
	}
}
