package agui_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/servertest"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/netspec"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/store"
)

// aguiNetwork has every kind of event in one run: the triage agent streams
// text and transfers to the helper, which calls a tool, then one that needs
// approval (the run stops for a decision), then a slow one (the run goes to
// a background worker), then answers.
const aguiNetwork = `
version: 1
name: agui
entry: triage
limits: {max_turns: 12, max_transfers: 3, timeout: 60s}
tools:
  - name: lookup
    description: Look up an order.
    parameters: {type: object, properties: {order_id: {type: string}}, required: [order_id]}
    result: {order_id: "1234", status: delivered}
  - name: refund
    description: Refund an amount. Needs approval.
    approval: required
    parameters: {type: object, properties: {amount: {type: number}}, required: [amount]}
    result: {refund_id: R-1}
  - name: report
    description: File a report. Slow.
    slow: true
    parameters: {type: object, properties: {topic: {type: string}}, required: [topic]}
    result: {report_id: RPT-1}
agents:
  - name: triage
    description: Routes.
    instructions: Route to the helper.
    model: scripted
    stream: {chunk_words: 2, delay: 5ms}
    script:
      - text: Let me get the helper for you right away.
        tool_calls:
          - name: transfer_to_helper
            arguments: {}
    transfers:
      - to: helper
        description: Helps with orders.
  - name: helper
    description: Helps with orders.
    instructions: Help.
    model: scripted
    stream: {chunk_words: 2, delay: 5ms}
    tools: [lookup, refund, report]
    script:
      - tool_calls: [{name: lookup, arguments: {order_id: "1234"}}]
      - tool_calls: [{name: refund, arguments: {amount: 5}}]
      - tool_calls: [{name: report, arguments: {topic: refunds}}]
      - text: Refund R-1 is issued and report RPT-1 is filed.
`

func withAGUINetwork(t testing.TB) servertest.Option {
	return func(o *servertest.Options) {
		spec, err := netspec.Parse([]byte(aguiNetwork), "agui.yaml", netspec.Options{})
		if err != nil {
			t.Fatal(err)
		}
		o.Service.Networks = append(o.Service.Networks, service.DefinitionOf(spec))
	}
}

func randomID(t testing.TB) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// aguiInput is a RunAgentInput.
func aguiInput(thread, run, text string, resume ...map[string]any) map[string]any {
	in := map[string]any{"threadId": thread, "runId": run, "state": map[string]any{"app": map[string]any{"page": 1}},
		"messages": []any{map[string]any{"id": "u1", "role": "user", "content": text}}, "tools": []any{}, "context": []any{}, "forwardedProps": map[string]any{}}
	if len(resume) > 0 {
		in["resume"] = resume
	}
	return in
}

// aguiTypes are the AG-UI types of events, CUSTOM with its name; the
// drafts of a background worker (as many as its flushes) are left out.
func aguiTypes(evs []servertest.Event) []string {
	var out []string
	for _, e := range evs {
		switch {
		case e.Type == "CUSTOM" && e.Data["name"] == "baton.draft":
		case e.Type == "CUSTOM":
			out = append(out, "CUSTOM "+fmt.Sprint(e.Data["name"]))
		default:
			out = append(out, e.Type)
		}
	}
	return out
}

// normalized is a stream with each text message's content events joined
// into one and the drafts left out: the same for a client that got the
// deltas live and one that reconnected after a restart (rebuilt events
// carry a message's text whole).
func normalized(t testing.TB, evs []servertest.Event) []string {
	t.Helper()
	var out []string
	text := map[string]*strings.Builder{}
	for _, e := range evs {
		switch {
		case e.Type == "CUSTOM" && e.Data["name"] == "baton.draft":
		case e.Type == "TEXT_MESSAGE_CONTENT":
			text[e.Data["messageId"].(string)].WriteString(e.Data["delta"].(string))
		case e.Type == "TEXT_MESSAGE_START":
			if text[e.Data["messageId"].(string)] != nil {
				t.Fatalf("message %s started twice", e.Data["messageId"])
			}
			text[e.Data["messageId"].(string)] = &strings.Builder{}
			out = append(out, e.Raw)
		case e.Type == "TEXT_MESSAGE_END":
			id := e.Data["messageId"].(string)
			out = append(out, "TEXT "+id+": "+text[id].String(), e.Raw)
		default:
			out = append(out, e.Raw)
		}
	}
	return out
}

// checkAGUIOrder checks what @ag-ui/client's verifier checks: the first
// event is RUN_STARTED, content only inside its message, tool call events
// inside START/END, steps closed before RUN_FINISHED, nothing after it;
// and that the ids increase.
func checkAGUIOrder(t testing.TB, evs []servertest.Event) {
	t.Helper()
	// A text message, a tool call and a step are each a span, named by its
	// id field, that its events open, are inside of or close.
	type span struct {
		key  string
		open map[string]bool
	}
	text, call, step := &span{"messageId", map[string]bool{}}, &span{"toolCallId", map[string]bool{}}, &span{"stepName", map[string]bool{}}
	const (
		opens = iota
		inside
		closes
	)
	spans := map[string]struct {
		s  *span
		op int
	}{
		"TEXT_MESSAGE_START": {text, opens}, "TEXT_MESSAGE_CONTENT": {text, inside}, "TEXT_MESSAGE_END": {text, closes},
		"TOOL_CALL_START": {call, opens}, "TOOL_CALL_ARGS": {call, inside}, "TOOL_CALL_END": {call, closes},
		"STEP_STARTED": {step, opens}, "STEP_FINISHED": {step, closes},
	}
	for i, e := range evs {
		if i == 0 && e.Type != "RUN_STARTED" {
			t.Fatalf("first event %s", e.Type)
		}
		// A draft has no id: the reader keeps the one before.
		if i > 0 && !isDraft(e) && !aguiIDLess(evs[i-1].ID, e.ID) {
			t.Fatalf("ids not increasing at %d: %s then %s", i, evs[i-1].ID, e.ID)
		}
		bad := false
		if sp, ok := spans[e.Type]; ok {
			id, _ := e.Data[sp.s.key].(string)
			switch sp.op {
			case opens:
				bad, sp.s.open[id] = sp.s.open[id], true
			case inside:
				bad = !sp.s.open[id]
			case closes:
				bad = !sp.s.open[id]
				delete(sp.s.open, id)
			}
		}
		switch e.Type {
		case "TEXT_MESSAGE_CONTENT":
			bad = bad || e.Data["delta"] == ""
		case "RUN_FINISHED", "RUN_ERROR":
			bad = len(text.open)+len(call.open)+len(step.open) > 0 || i != len(evs)-1
		}
		if bad {
			t.Fatalf("event %d %s out of order: %v", i, e.Raw, aguiTypes(evs))
		}
	}
}

func noDrafts(evs []servertest.Event) []servertest.Event {
	var out []servertest.Event
	for _, e := range evs {
		if !isDraft(e) {
			out = append(out, e)
		}
	}
	return out
}

func isDraft(e servertest.Event) bool { return e.Type == "CUSTOM" && e.Data["name"] == "baton.draft" }

// aguiIDLess compares AG-UI event ids "SEQ[.SUB]:K[:N:B]" (K counts the
// events of the same baton event that follow).
func aguiIDLess(a, b string) bool {
	pa, pb := strings.Split(a, ":"), strings.Split(b, ":")
	if pa[0] != pb[0] {
		return servertest.IDLess(pa[0], pb[0])
	}
	var ka, kb int
	fmt.Sscan(pa[1], &ka)
	fmt.Sscan(pb[1], &kb)
	return ka > kb
}

// TestAGUI drives the agui network through POST /v1/agui/{network}: the
// first request streams the text, the transfer, a tool call and the
// approval the run stops for; the second answers it (resume) and streams
// the run to its end across its hand-over to a background worker. Every
// reconnect with Last-Event-ID, to the same server or to a new one on the
// same store (a restart), gets exactly the rest.
func TestAGUI(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		b := servertest.SetupStore(t, open(t), withAGUINetwork(t))
		thread := "agui-" + randomID(t)
		first := aguiInput(thread, "run-1", "I need a refund for order 1234")
		resp, ch := b.Stream(t, b.KeyA, "POST", "/v1/agui/agui", first)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || resp.Header.Get("Baton-Thread-Id") != thread {
			t.Fatalf("POST /v1/agui/agui: %d %v", resp.StatusCode, resp.Header)
		}
		runID := resp.Header.Get("Baton-Run-Id")
		evs := servertest.Collect(t, ch, nil)
		checkAGUIOrder(t, evs)
		want := []string{"RUN_STARTED", "STATE_SNAPSHOT", "STEP_STARTED",
			"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
			"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
			"CUSTOM baton.transfer", "STATE_DELTA", "STEP_FINISHED", "STEP_STARTED",
			"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
			"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
			"STATE_DELTA", "STEP_FINISHED", "RUN_FINISHED"}
		if got := aguiTypes(evs); !reflect.DeepEqual(got, want) {
			t.Fatalf("first run:\n got %v\nwant %v", got, want)
		}
		if evs[0].Data["runId"] != "run-1" || evs[0].Data["threadId"] != thread || evs[len(evs)-1].Data["runId"] != "run-1" {
			t.Fatalf("runId and threadId not echoed: %s … %s", evs[0].Raw, evs[len(evs)-1].Raw)
		}
		snap := evs[1].Data["snapshot"].(map[string]any)
		if snap["app"] == nil || snap["baton"].(map[string]any)["run_id"] != runID || evs[2].Data["stepName"] != "triage" || evs[17].Data["stepName"] != "helper" {
			t.Fatalf("snapshot or steps: %s %s %s", evs[1].Raw, evs[2].Raw, evs[17].Raw)
		}
		var text strings.Builder
		for _, e := range evs[4:9] {
			text.WriteString(e.Data["delta"].(string))
		}
		msgID := evs[3].Data["messageId"]
		if text.String() != "Let me get the helper for you right away." || evs[10].Data["parentMessageId"] != msgID || evs[10].Data["toolCallName"] != "transfer_to_helper" {
			t.Fatalf("text %q, transfer call %s", text.String(), evs[10].Raw)
		}
		if evs[14].Data["value"].(map[string]any)["to"] != "helper" || evs[18].Data["toolCallName"] != "lookup" || evs[21].Data["toolCallId"] != evs[18].Data["toolCallId"] ||
			evs[21].Data["content"] != `{"order_id":"1234","status":"delivered"}` || evs[22].Data["toolCallName"] != "refund" {
			t.Fatalf("transfer or tool call: %s %s %s", evs[14].Raw, evs[18].Raw, evs[21].Raw)
		}
		var fin struct {
			Outcome struct {
				Type       string
				Interrupts []struct{ ID, Reason, ToolCallID string }
			}
		}
		json.Unmarshal([]byte(evs[len(evs)-1].Raw), &fin)
		if fin.Outcome.Type != "interrupt" || len(fin.Outcome.Interrupts) != 1 || fin.Outcome.Interrupts[0].Reason != "tool_approval" || fin.Outcome.Interrupts[0].ToolCallID != evs[22].Data["toolCallId"] {
			t.Fatalf("RUN_FINISHED: %s", evs[len(evs)-1].Raw)
		}
		interrupt := fin.Outcome.Interrupts[0].ID

		// The same request again is the same run: nothing starts, the
		// stream is the run's; a thread has one run at a time, so another
		// runId is refused while the interrupt waits.
		_, ch = b.Stream(t, b.KeyA, "POST", "/v1/agui/agui", first)
		if again := servertest.Collect(t, ch, nil); !reflect.DeepEqual(again, evs) {
			t.Fatalf("the same request again:\n%v\n%v", aguiTypes(again), aguiTypes(evs))
		}
		if r := b.Do(t, b.KeyA, "POST", "/v1/agui/agui", aguiInput(thread, "run-x", "hello")); r.Status != http.StatusConflict || r.ErrType(t) != "thread_busy" {
			t.Fatalf("a second run on a waiting thread: %d %s", r.Status, r.Body)
		}

		// The answer: a new AG-UI run resumes the baton run, which goes to a
		// background worker and on to its end.
		second := aguiInput(thread, "run-2", "I need a refund for order 1234", map[string]any{"interruptId": interrupt, "status": "resolved", "payload": map[string]any{"type": "approve"}})
		resp, ch = b.Stream(t, b.KeyA, "POST", "/v1/agui/agui", second)
		if resp.StatusCode != 200 || resp.Header.Get("Baton-Run-Id") != runID {
			t.Fatalf("resume: %d %v", resp.StatusCode, resp.Header)
		}
		// Cut mid-run, at the hand-over: the reconnect gets the rest live.
		head := servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "CUSTOM" && e.Data["name"] == "baton.suspended" })
		resp.Body.Close()
		_, ch = b.Stream(t, b.KeyA, "POST", "/v1/agui/agui", second, "Last-Event-ID", head[len(head)-1].ID)
		tail := servertest.Collect(t, ch, nil)
		evs2 := append(head, tail...)
		checkAGUIOrder(t, evs2)
		want2 := []string{"RUN_STARTED", "STATE_SNAPSHOT", "STEP_STARTED", "TOOL_CALL_RESULT",
			"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "CUSTOM baton.suspended", "STATE_DELTA",
			"CUSTOM baton.resumed", "STATE_DELTA", "TOOL_CALL_RESULT",
			"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "STATE_DELTA", "STEP_FINISHED", "RUN_FINISHED"}
		// The answer's text comes in one TEXT_MESSAGE_CONTENT or, where
		// the worker's deltas reach the stream live (PostgreSQL: its
		// signals), in several that make it whole.
		var answer strings.Builder
		for _, e := range evs2 {
			if e.Type == "TEXT_MESSAGE_CONTENT" {
				answer.WriteString(e.Data["delta"].(string))
			}
		}
		var got []string
		for _, typ := range aguiTypes(evs2) {
			if typ != "TEXT_MESSAGE_CONTENT" || len(got) == 0 || got[len(got)-1] != typ {
				got = append(got, typ)
			}
		}
		if !reflect.DeepEqual(got, want2) {
			t.Fatalf("resumed run:\n got %v\nwant %v", aguiTypes(evs2), want2)
		}
		if answer.String() != "Refund R-1 is issued and report RPT-1 is filed." {
			t.Fatalf("resumed run's text: %q", answer.String())
		}
		last := evs2[len(evs2)-1]
		if last.Data["runId"] != "run-2" || last.Data["outcome"].(map[string]any)["type"] != "success" || last.Data["result"].(map[string]any)["output"] != "Refund R-1 is issued and report RPT-1 is filed." {
			t.Fatalf("RUN_FINISHED: %s", last.Raw)
		}
		// The whole resumed run, read again, is what the two reads got.
		_, ch = b.Stream(t, b.KeyA, "POST", "/v1/agui/agui", second)
		if all := servertest.Collect(t, ch, nil); !reflect.DeepEqual(normalized(t, all), normalized(t, evs2)) {
			t.Fatalf("read again:\n%v\n%v", aguiTypes(all), aguiTypes(evs2))
		}

		// Reconnect after every event: to this server (the run's log in
		// memory), and to a new server on the same store (a restart: the
		// events rebuilt from the checkpoints). Each gets exactly the rest.
		restarted := b.Replica(t, 0)
		for _, tc := range []struct {
			name string
			in   map[string]any
			evs  []servertest.Event
		}{{"first", first, evs}, {"resumed", second, evs2}} {
			for i := range tc.evs {
				if isDraft(tc.evs[i]) {
					continue // no id: the client's last id is the event before
				}
				for _, srv := range []*servertest.Bundle{b, restarted} {
					_, ch := srv.Stream(t, b.KeyA, "POST", "/v1/agui/agui", tc.in, "Last-Event-ID", tc.evs[i].ID)
					rest := servertest.Collect(t, ch, nil)
					got := append(append([]servertest.Event{}, tc.evs[:i+1]...), rest...)
					checkAGUIOrder(t, got)
					if !reflect.DeepEqual(normalized(t, got), normalized(t, tc.evs)) {
						t.Fatalf("%s run, reconnect after %s (%s) to %s:\n got %v\nwant %v", tc.name, tc.evs[i].ID, tc.evs[i].Type, srv.URL, aguiTypes(got), aguiTypes(tc.evs))
					}
					// The resumed run's events are all in this server's log,
					// its deltas too: the same events again.
					if srv == b && tc.name == "resumed" && !reflect.DeepEqual(noDrafts(rest), noDrafts(tc.evs[i+1:])) {
						t.Fatalf("%s run, reconnect after %s to the same server: not the same events", tc.name, tc.evs[i].ID)
					}
				}
			}
		}
	})
}

// TestAGUIErrors: what a client gets for a bad request, before any
// stream, on both backends; and another owner's threads and runs are not
// there for a caller.
func TestAGUIErrors(t *testing.T) {
	t.Parallel()
	servertest.OnBackends(t, func(t *testing.T, b *servertest.Bundle) {
		thread := "agui-" + randomID(t)
		good := aguiInput(thread, "r1", "I want a refund for order 1234")
		resp, ch := b.Stream(t, b.KeyA, "POST", "/v1/agui/support", good)
		if resp.StatusCode != 200 {
			t.Fatalf("good: %d", resp.StatusCode)
		}
		evs := servertest.Collect(t, ch, nil)
		interrupt := evs[len(evs)-1].Data["outcome"].(map[string]any)["interrupts"].([]any)[0].(map[string]any)["id"].(string)
		with := func(k string, v any) map[string]any {
			in := aguiInput(thread, "r2", "hi")
			in[k] = v
			return in
		}
		for _, tc := range []struct {
			name   string
			key    string
			path   string
			body   any
			hdr    []string
			status int
			param  string
		}{
			{"no key", "", "/v1/agui/support", good, nil, 401, ""},
			{"unknown network", b.KeyA, "/v1/agui/nowhere", good, nil, 404, ""},
			{"not JSON", b.KeyA, "/v1/agui/support", "{", nil, 400, ""},
			{"no threadId", b.KeyA, "/v1/agui/support", with("threadId", ""), nil, 400, "threadId"},
			{"bad runId", b.KeyA, "/v1/agui/support", with("runId", "a/b"), nil, 400, "runId"},
			{"assistant last", b.KeyA, "/v1/agui/support", with("messages", []any{map[string]any{"id": "1", "role": "assistant", "content": "x"}}), nil, 400, "messages"},
			{"image", b.KeyA, "/v1/agui/support", with("messages", []any{map[string]any{"id": "1", "role": "user", "content": []any{map[string]any{"type": "image", "source": map[string]any{"type": "url", "value": "https://x"}}}}}), nil, 400, "messages"},
			{"empty input", b.KeyA, "/v1/agui/support", with("messages", []any{map[string]any{"id": "1", "role": "user", "content": " "}}), nil, 400, "messages"},
			{"NUL input", b.KeyA, "/v1/agui/support", aguiInput("agui-"+randomID(t), "r", "a\x00b"), nil, 400, ""},
			{"context", b.KeyA, "/v1/agui/support", with("context", "x"), nil, 400, "context"},
			{"big state", b.KeyA, "/v1/agui/support", with("state", map[string]any{"a": strings.Repeat("x", 20000)}), nil, 400, "state"},
			{"unknown agent", b.KeyA, "/v1/agui/support", with("forwardedProps", map[string]any{"baton": map[string]any{"agent": "nobody"}}), nil, 400, "forwardedProps"},
			{"bad resume status", b.KeyA, "/v1/agui/support", with("resume", []any{map[string]any{"interruptId": interrupt, "status": "maybe"}}), nil, 400, "resume"},
			{"unknown interrupt", b.KeyA, "/v1/agui/support", with("resume", []any{map[string]any{"interruptId": "run_x-i1", "status": "resolved"}}), nil, 400, "resume"},
			{"bad edit", b.KeyA, "/v1/agui/support", with("resume", []any{map[string]any{"interruptId": interrupt, "status": "resolved", "payload": map[string]any{"type": "edit", "args": map[string]any{"amount": "x"}}}}), nil, 400, "args"},
			{"bad Last-Event-ID", b.KeyA, "/v1/agui/support", good, []string{"Last-Event-ID", "x:y"}, 400, "Last-Event-ID"},
			{"another network's thread", b.KeyA, "/v1/agui/research", aguiInput(thread, "r3", "hi"), nil, 400, "threadId"},
			{"busy thread", b.KeyA, "/v1/agui/support", aguiInput(thread, "r4", "hi"), nil, 409, ""},
			{"another owner's thread", b.KeyB, "/v1/agui/support", good, nil, 409, "threadId"},
			{"another owner's interrupt", b.KeyB, "/v1/agui/support", aguiInput("agui-"+randomID(t), "r5", "hi", map[string]any{"interruptId": interrupt, "status": "resolved"}), nil, 400, "resume"},
		} {
			r := b.Do(t, tc.key, "POST", tc.path, tc.body, tc.hdr...)
			if r.Status != tc.status {
				t.Fatalf("%s: %d %s", tc.name, r.Status, r.Body)
			}
			var e struct {
				Error struct{ Type, Message, Param string }
			}
			r.JSON(t, &e)
			if e.Error.Message == "" || tc.param != "" && e.Error.Param != tc.param {
				t.Fatalf("%s: %s", tc.name, r.Body)
			}
		}
		// The refused edit left the interrupt pending: it is answered now.
		resp, ch = b.Stream(t, b.KeyA, "POST", "/v1/agui/support", aguiInput(thread, "r6", "", map[string]any{"interruptId": interrupt, "status": "resolved"}))
		if evs := servertest.Collect(t, ch, nil); resp.StatusCode != 200 || evs[len(evs)-1].Data["type"] != "RUN_FINISHED" || evs[len(evs)-1].Data["outcome"].(map[string]any)["type"] != "success" {
			t.Fatalf("resume after a refused edit: %d %v", resp.StatusCode, aguiTypes(evs))
		}
	})
}

// FuzzAGUI sends arbitrary bodies, as RunAgentInput, to POST
// /v1/agui/support on every backend: the answer is never a 5xx, always a
// JSON error body when it is an error, and a body one backend refuses
// (400) the others refuse too. A body that is a valid input runs a turn
// (or answers an interrupt) and streams it.
func FuzzAGUI(f *testing.F) {
	fs := servertest.NewFuzzServer(f)
	for _, seed := range []string{
		`{"threadId":"t1","runId":"r1","messages":[{"id":"1","role":"user","content":"I was charged twice"}]}`,
		`{"threadId":"t2","runId":"r1","state":{"a":1},"messages":[{"id":"1","role":"system","content":"Be brief"},{"id":"2","role":"assistant","content":"Hi"},{"id":"3","role":"user","content":[{"type":"text","text":"I want a refund"}]}],"tools":[],"context":[{"description":"page","value":"/orders"}],"forwardedProps":{"baton":{"agent":"billing"}}}`,
		`{"threadId":"t2","runId":"r2","messages":[],"resume":[{"interruptId":"run_x-i4/call_1","status":"resolved","payload":{"type":"edit","args":{"amount":1}}}]}`,
		`{"threadId":"t2","runId":"r3","messages":[],"resume":[{"interruptId":"run_x-i4","status":"cancelled"}]}`,
		`{"threadId":"t3","runId":"r1","messages":[{"id":"1","role":"user","content":[{"type":"image","source":{"type":"url","value":"https://x"}}]}]}`,
		`{"threadId":"t3","runId":"r1","messages":[{"id":"1","role":"assistant","content":"hi"}]}`,
		`{"threadId":"t3","runId":"r1","messages":[{"id":"1","role":"user","content":"hi"}],"forwardedProps":{"baton":{"agent":"nobody"}}}`,
		`{"threadId":"","runId":"r1","messages":[]}`, `{"threadId":"a b","runId":"r","messages":[]}`, `{"runId":"r"}`,
		``, `null`, `[]`, `{"threadId":`, "\xff\xfe", `{"threadId":"t","runId":"r","messages":[{"role":"user","content":"x"}]} trailing`,
		// What PostgreSQL refuses: NUL, lone surrogates, huge numbers.
		`{"threadId":"t4","runId":"r1","messages":[{"id":"1","role":"user","content":"a\u0000b"}]}`,
		`{"threadId":"t4","runId":"r1","messages":[{"id":"1","role":"user","content":"\ud800"}]}`,
		`{"threadId":"t5","runId":"r1","messages":[{"id":"1","role":"system","content":"\u0000"},{"id":"2","role":"user","content":"hi"}]}`,
		`{"threadId":"t6","runId":"r1","state":{"a":1e131072,"b":"\u0000","c":"\udc00"},"messages":[{"id":"1","role":"user","content":"hi"}]}`,
		`{"threadId":"t7","runId":"r1","context":[{"description":"\u0000","value":"\ud800"}],"messages":[{"id":"1","role":"user","content":"hi"}]}`,
		`{"threadId":"t8","runId":"r1","messages":[{"id":"1","role":"user","content":"hi"}],"resume":[{"interruptId":"\u0000-i1","status":"resolved"}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fs.Send(t, "POST", "/v1/agui/support", body)
	})
}
