package protocols_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/servertest"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/webhook"
)

// scopedRoute is a route of every protocol, a request valid enough for it,
// and the scope it needs ("" for a public route).
type scopedRoute struct {
	pattern      string
	method, path string
	body         any
	scope        store.Scope
}

// scopedRoutes is every route the server registers (TestScopes checks the
// list against Server.Routes), on a thread, run and interrupt of alice's.
func scopedRoutes(thread, run, intr string) []scopedRoute {
	tasksGet := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": map[string]any{"id": run}}
	chat := map[string]any{"model": "support", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	return []scopedRoute{
		{"GET /v1/networks", "GET", "/v1/networks", nil, store.ScopeRead},
		{"POST /v1/threads", "POST", "/v1/threads", map[string]any{"network": "support"}, store.ScopeRun},
		{"GET /v1/threads", "GET", "/v1/threads", nil, store.ScopeRead},
		{"GET /v1/threads/{id}", "GET", "/v1/threads/" + thread, nil, store.ScopeRead},
		{"GET /v1/threads/{id}/messages", "GET", "/v1/threads/" + thread + "/messages", nil, store.ScopeRead},
		{"POST /v1/threads/{id}/runs", "POST", "/v1/threads/" + thread + "/runs", map[string]any{"input": "hello"}, store.ScopeRun},
		{"GET /v1/threads/{id}/runs/{run_id}", "GET", "/v1/threads/" + thread + "/runs/" + run, nil, store.ScopeRead},
		{"GET /v1/threads/{id}/runs/{run_id}/events", "GET", "/v1/threads/" + thread + "/runs/" + run + "/events", nil, store.ScopeRead},
		{"POST /v1/threads/{id}/runs/{run_id}/cancel", "POST", "/v1/threads/" + thread + "/runs/run_missing/cancel", nil, store.ScopeRun},
		{"GET /v1/threads/{id}/runs/{run_id}/steps", "GET", "/v1/threads/" + thread + "/runs/" + run + "/steps", nil, store.ScopeRead},
		{"GET /v1/threads/{id}/runs/{run_id}/steps/{step_id}", "GET", "/v1/threads/" + thread + "/runs/" + run + "/steps/1", nil, store.ScopeRead},
		{"GET /v1/threads/{id}/events", "GET", "/v1/threads/" + thread + "/events", nil, store.ScopeRead},
		{"POST /v1/threads/{id}/fork", "POST", "/v1/threads/" + thread + "/fork", map[string]any{"at": "1"}, store.ScopeRun},
		{"POST /v1/threads/{id}/handoff", "POST", "/v1/threads/" + thread + "/handoff", map[string]any{}, store.ScopeRun},
		{"GET /v1/audit", "GET", "/v1/audit", nil, store.ScopeAdmin},
		{"GET /v1/webhooks/deliveries", "GET", "/v1/webhooks/deliveries", nil, store.ScopeRead},
		{"POST /v1/webhooks/secret", "POST", "/v1/webhooks/secret", map[string]any{"url": "http://127.0.0.1:9/hook"}, store.ScopeRun},
		{"GET /v1/interrupts/{id}", "GET", "/v1/interrupts/" + intr, nil, store.ScopeRead},
		{"POST /v1/interrupts/{id}/decision", "POST", "/v1/interrupts/" + intr + "/decision", map[string]any{"type": "reject"}, store.ScopeDecide},
		{"GET /v1/models", "GET", "/v1/models", nil, store.ScopeRead},
		{"GET /v1/models/{id}", "GET", "/v1/models/support", nil, store.ScopeRead},
		{"POST /v1/chat/completions", "POST", "/v1/chat/completions", chat, store.ScopeRun},
		{"POST /v1/responses", "POST", "/v1/responses", map[string]any{"model": "support", "input": "hi"}, store.ScopeRun},
		{"POST /v1/agui/{network}", "POST", "/v1/agui/support", map[string]any{}, store.ScopeRun},
		{"GET /a2a/{network}/.well-known/agent-card.json", "GET", "/a2a/support/.well-known/agent-card.json", nil, ""},
		{"POST /a2a/{network}", "POST", "/a2a/support", tasksGet, store.ScopeRead},
		{"POST /mcp/{network}", "POST", "/mcp/support", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"}, store.ScopeRead},
		{"GET /mcp/{network}", "GET", "/mcp/support", nil, store.ScopeRead},
		{"DELETE /mcp/{network}", "DELETE", "/mcp/support", nil, store.ScopeRead},
	}
}

// status sends a request and returns its status and the start of its body,
// without waiting for a stream to end.
func status(t *testing.T, b *servertest.Bundle, key string, rt scopedRoute) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req := b.Request(t, key, rt.method, rt.path, rt.body).WithContext(ctx)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", rt.method, rt.path, err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		return resp.StatusCode, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, body
}

func scopedKey(t *testing.T, st store.Store, owner string, p store.CreateAPIKeyParams) string {
	t.Helper()
	p.OwnerID = owner
	k, err := st.CreateAPIKey(t.Context(), &p)
	if err != nil {
		t.Fatal(err)
	}
	return k.Secret
}

// TestScopes sends every route with a key of every scope: a key without
// the route's scope gets 403 naming it, a key with it gets past the check
// (whatever the route then answers); an expired key gets 401 everywhere. On
// SQLite and PostgreSQL.
func TestScopes(t *testing.T) {
	servertest.OnBackends(t, func(t *testing.T, b *servertest.Bundle) {
		thread, run, intr := b.Interrupted(t, b.KeyA)
		table := scopedRoutes(thread, run, intr)

		// The table is every registered route: a new route must say here
		// what it needs.
		var registered, listed []string
		for _, ri := range b.Srv.Routes() {
			registered = append(registered, ri.Pattern)
		}
		for _, rt := range table {
			listed = append(listed, rt.pattern)
			i := slices.IndexFunc(b.Srv.Routes(), func(ri server.RouteInfo) bool { return ri.Pattern == rt.pattern })
			if i >= 0 && (b.Srv.Routes()[i].Scope != rt.scope || b.Srv.Routes()[i].Public != (rt.scope == "")) {
				t.Errorf("route %s declares scope %q (public %v), want %q", rt.pattern, b.Srv.Routes()[i].Scope, b.Srv.Routes()[i].Public, rt.scope)
			}
		}
		slices.Sort(registered)
		slices.Sort(listed)
		if !slices.Equal(registered, listed) {
			t.Fatalf("registered routes %q\nthe test's table   %q", registered, listed)
		}

		expired := scopedKey(t, b.St, "alice", store.CreateAPIKeyParams{ExpiresAt: time.Now().Add(-time.Minute)})
		for _, have := range store.Scopes {
			key := scopedKey(t, b.St, "alice", store.CreateAPIKeyParams{Scopes: []store.Scope{have}})
			for _, rt := range table {
				code, body := status(t, b, key, rt)
				switch {
				case rt.scope == "":
					if code != http.StatusOK {
						t.Errorf("%s (public) with a %s key: %d %s", rt.pattern, have, code, body)
					}
				case have.Includes(rt.scope):
					if code == http.StatusForbidden || code == http.StatusUnauthorized {
						t.Errorf("%s with a %s key: %d %s, want it past the scope check", rt.pattern, have, code, body)
					}
				default:
					var e struct {
						Error struct{ Type, Message, Scope string }
					}
					_ = json.Unmarshal(body, &e)
					if code != http.StatusForbidden || !strings.Contains(e.Error.Message, string(rt.scope)) {
						t.Errorf("%s with a %s key: %d %s, want 403 naming scope %s", rt.pattern, have, code, body, rt.scope)
					}
					if !openAIRoute(rt.path) && (e.Error.Type != "forbidden" || e.Error.Scope != string(rt.scope)) {
						t.Errorf("%s with a %s key: error %+v, want type forbidden, scope %s", rt.pattern, have, e.Error, rt.scope)
					}
				}
			}
		}
		for _, rt := range table {
			if rt.scope == "" {
				continue
			}
			code, body := status(t, b, expired, rt)
			if code != http.StatusUnauthorized || !strings.Contains(string(body), "expired") {
				t.Errorf("%s with an expired key: %d %s", rt.pattern, code, body)
			}
		}
	})
}

// TestScopesA2AMethods: on A2A's one route a read key reads tasks, and the
// methods that start or answer one need the run or decide scope.
func TestScopesA2AMethods(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	_, run, _ := b.Interrupted(t, b.KeyA)
	read := scopedKey(t, b.St, "alice", store.CreateAPIKeyParams{Scopes: []store.Scope{store.ScopeRead}})
	runKey := scopedKey(t, b.St, "alice", store.CreateAPIKeyParams{Scopes: []store.Scope{store.ScopeRun}})
	send := func(text, task string) map[string]any {
		msg := map[string]any{"kind": "message", "messageId": "m-" + text + task, "role": "user", "parts": []any{map[string]any{"kind": "text", "text": text}}}
		if task != "" {
			msg["taskId"] = task
		}
		return map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": map[string]any{"message": msg}}
	}
	checkA2ACalls(t, b, []a2aCall{
		{"read gets", read, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": map[string]any{"id": run}}, ""},
		{"read sends", read, send("hello", ""), "run scope"},
		{"read cancels", read, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tasks/cancel", "params": map[string]any{"id": run}}, "run scope"},
		{"run answers", runKey, send("approve", run), "decide scope"},
	})
}

// a2aCall is a JSON-RPC call on A2A's route (/a2a/support) with a key.
type a2aCall struct {
	name, key string
	body      any
	want      string // in the JSON-RPC error; "" for none
}

// checkA2ACalls makes each call in order and checks its JSON-RPC error.
func checkA2ACalls(t *testing.T, b *servertest.Bundle, calls []a2aCall) {
	t.Helper()
	for _, tc := range calls {
		r := b.Do(t, tc.key, "POST", "/a2a/support", tc.body)
		var res struct {
			Error *struct{ Message string }
		}
		r.JSON(t, &res)
		switch {
		case tc.want == "" && res.Error != nil:
			t.Errorf("%s: %s", tc.name, r.Body)
		case tc.want != "" && (res.Error == nil || !strings.Contains(string(r.Body), tc.want)):
			t.Errorf("%s: %s, want an error naming the %s", tc.name, r.Body, tc.want)
		}
	}
}

// TestScopesA2APush checks the scopes of the A2A push notification config
// methods of both protocols, on the one JSON-RPC route (read): setting
// and deleting a config need run, getting and listing them read.
func TestScopesA2APush(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t, func(o *servertest.Options) {
		o.Service.Webhooks = webhook.Config{Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Allow: []string{"127.0.0.1"}}
	})
	_, run, _ := b.Interrupted(t, b.KeyA)
	read := scopedKey(t, b.St, "alice", store.CreateAPIKeyParams{Scopes: []store.Scope{store.ScopeRead}})
	runKey := scopedKey(t, b.St, "alice", store.CreateAPIKeyParams{Scopes: []store.Scope{store.ScopeRun}})
	const url = "http://127.0.0.1:9/push"
	rpc := func(method string, params map[string]any) map[string]any {
		return map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
	}
	set03 := func(id string) map[string]any {
		return rpc("tasks/pushNotificationConfig/set", map[string]any{"taskId": run, "pushNotificationConfig": map[string]any{"id": id, "url": url}})
	}
	set10 := func(id string) map[string]any {
		return rpc("CreateTaskPushNotificationConfig", map[string]any{"taskId": run, "id": id, "url": url})
	}
	checkA2ACalls(t, b, []a2aCall{
		{"0.3 read sets", read, set03("r03"), "run scope"},
		{"0.3 run sets", runKey, set03("c03"), ""},
		{"0.3 read gets", read, rpc("tasks/pushNotificationConfig/get", map[string]any{"id": run, "pushNotificationConfigId": "c03"}), ""},
		{"0.3 read lists", read, rpc("tasks/pushNotificationConfig/list", map[string]any{"id": run}), ""},
		{"0.3 read deletes", read, rpc("tasks/pushNotificationConfig/delete", map[string]any{"id": run, "pushNotificationConfigId": "c03"}), "run scope"},
		{"0.3 run deletes", runKey, rpc("tasks/pushNotificationConfig/delete", map[string]any{"id": run, "pushNotificationConfigId": "c03"}), ""},
		{"1.0 read creates", read, set10("r10"), "run scope"},
		{"1.0 run creates", runKey, set10("c10"), ""},
		{"1.0 read gets", read, rpc("GetTaskPushNotificationConfig", map[string]any{"taskId": run, "id": "c10"}), ""},
		{"1.0 read lists", read, rpc("ListTaskPushNotificationConfigs", map[string]any{"taskId": run}), ""},
		{"1.0 read deletes", read, rpc("DeleteTaskPushNotificationConfig", map[string]any{"taskId": run, "id": "c10"}), "run scope"},
		{"1.0 run deletes", runKey, rpc("DeleteTaskPushNotificationConfig", map[string]any{"taskId": run, "id": "c10"}), ""},
	})
	// The refused set and delete changed nothing: r03 and r10 do not
	// exist, and the deletes by the run key went through.
	for _, body := range []any{
		rpc("tasks/pushNotificationConfig/get", map[string]any{"id": run, "pushNotificationConfigId": "r03"}),
		rpc("GetTaskPushNotificationConfig", map[string]any{"taskId": run, "id": "r10"}),
		rpc("GetTaskPushNotificationConfig", map[string]any{"taskId": run, "id": "c10"}),
	} {
		if r := b.Do(t, read, "POST", "/a2a/support", body); !strings.Contains(string(r.Body), `"error"`) {
			t.Errorf("%v: %s, want not found", body, r.Body)
		}
	}
}

// TestNetworkKeys: a key limited to a network sees only that network's
// threads, runs and interrupts, lists only it, and cannot start a run on
// another.
func TestNetworkKeys(t *testing.T) {
	servertest.OnBackends(t, func(t *testing.T, b *servertest.Bundle) {
		thread, run, intr := b.Interrupted(t, b.KeyA) // a support thread
		research := b.Thread(t, b.KeyA, "research")
		key := scopedKey(t, b.St, "alice", store.CreateAPIKeyParams{Networks: []string{"research"}})

		for _, rt := range scopedRoutes(thread, run, intr) {
			if !strings.Contains(rt.path, thread) && !strings.Contains(rt.path, intr) {
				continue
			}
			if code, body := status(t, b, key, rt); code != http.StatusNotFound {
				t.Errorf("%s of another network: %d %s, want 404", rt.pattern, code, body)
			}
		}
		for _, rt := range []scopedRoute{
			{method: "POST", path: "/v1/threads", body: map[string]any{"network": "support"}},
			{method: "POST", path: "/v1/chat/completions", body: map[string]any{"model": "support", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}},
			{method: "POST", path: "/a2a/support", body: map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": map[string]any{"id": run}}},
		} {
			if code, body := status(t, b, key, rt); code != http.StatusForbidden || !strings.Contains(string(body), "research") {
				t.Errorf("%s %s on another network: %d %s, want 403 naming the key's networks", rt.method, rt.path, code, body)
			}
		}
		if code, body := status(t, b, key, scopedRoute{method: "GET", path: "/v1/models/support"}); code != http.StatusNotFound {
			t.Errorf("GET /v1/models/support: %d %s", code, body)
		}
		for path, want := range map[string]string{"/v1/threads": research, "/v1/networks": "research", "/v1/models": "research"} {
			r := b.Do(t, key, "GET", path, nil)
			if r.Status != http.StatusOK || !strings.Contains(string(r.Body), want) || strings.Contains(string(r.Body), thread) || strings.Contains(string(r.Body), `"support"`) {
				t.Errorf("GET %s: %d %s, want only the research network's", path, r.Status, r.Body)
			}
		}
		if r := b.Do(t, key, "GET", "/v1/threads/"+research, nil); r.Status != http.StatusOK {
			t.Errorf("own network's thread: %d %s", r.Status, r.Body)
		}
		if r := b.Do(t, key, "POST", "/v1/threads", map[string]any{"network": "research"}); r.Status != http.StatusCreated && r.Status != http.StatusOK {
			t.Errorf("thread of own network: %d %s", r.Status, r.Body)
		}
	})
}
