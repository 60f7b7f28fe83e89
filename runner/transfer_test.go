package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/transfer"
)

var orderSchema = json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string","pattern":"^[0-9]+$"},"reason":{"type":"string"},"notes":{"type":"string"}},"required":["order_id","reason"],"additionalProperties":false}`)

func TestTransferDeliversTypedContext(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 900)
	triage, _ := ag("triage", calls("transfer_to_billing", `{"order_id":"1234","reason":"charged twice","notes":"`+long+`"}`))
	var seen *transfer.Context
	billing, brec := ag("billing",
		calls(runner.TransferContextTool, `{"ref":"REF"}`), // REF is replaced below once the id is known
		text("refunded the duplicate"))
	billing.InstructionsFunc = func(_ context.Context, rc *agent.RunContext) (string, error) {
		seen = rc.Transfer
		return "You are billing.", nil
	}
	triage.Transfers = []*transfer.Transfer{{To: "billing", ContextSchema: orderSchema}}
	// The scripted model cannot know the transfer id in advance: resolve the
	// reference through a wrapper that rewrites it.
	billing.Model = refFixer{brec}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, triage, billing)})

	evs := mustCollect(t, r.Stream(t.Context(), "I was charged twice"))
	hs := ofType[*runner.TransferEvent](evs)
	if len(hs) != 1 {
		t.Fatalf("transfer events = %d, want 1", len(hs))
	}
	h := hs[0]
	if h.From != "triage" || h.To != "billing" || h.Tool != "transfer_to_billing" || h.Reason != "charged twice" || h.HistoryPolicy != transfer.HistoryFull {
		t.Errorf("transfer event = %+v", h)
	}
	var data map[string]string
	if err := json.Unmarshal(h.Context, &data); err != nil || data["order_id"] != "1234" {
		t.Errorf("transfer context = %s (%v)", h.Context, err)
	}
	// Structured data reaches the target's run context, not the query.
	if seen == nil || seen.From != "triage" || string(seen.Data) != string(h.Context) {
		t.Fatalf("run context transfer = %+v", seen)
	}
	first := brec.requests()[0]
	if !strings.Contains(first.System, `<transfer_context from="triage" type="transfer">`) || !strings.Contains(first.System, "order_id: \"1234\"") {
		t.Errorf("system prompt lacks the context block:\n%s", first.System)
	}
	// The large field goes by reference with a preview.
	if strings.Contains(first.System, long) || !strings.Contains(first.System, "ref transfer:") {
		t.Errorf("large field not delivered by reference:\n%s", first.System)
	}
	var offered bool
	for _, tool := range first.Tools {
		offered = offered || tool.Name == runner.TransferContextTool
	}
	if !offered {
		t.Error("reference tool not offered")
	}
	res := ofType[*runner.ToolResultEvent](evs)
	var got string
	for _, e := range res {
		if e.Name == runner.TransferContextTool {
			got = e.Output
		}
	}
	if got != `"`+long+`"` {
		t.Errorf("reference lookup returned %.40q…", got)
	}
	for _, u := range first.Messages {
		if u.Role == message.RoleUser && strings.Contains(u.Text(), "order_id") {
			t.Error("context was pasted into the query")
		}
	}
	end := ofType[*runner.RunEndEvent](evs)[0]
	if end.Status != runstate.StatusCompleted || end.LastAgent != "billing" || end.Transfers != 1 {
		t.Errorf("run end = %+v", end)
	}
}

// TestResumeSchema1ContextCall resumes a run that a build before the rename
// of handoffs to transfers suspended (schema version 1) with a call of the
// context tool under its old name, read_handoff_context, and a "handoff:"
// reference, still pending: the call is answered.
func TestResumeSchema1ContextCall(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("y", 900)
	triage, _ := ag("triage", calls("transfer_to_billing", `{"reason":"r","notes":"`+long+`"}`))
	billing, brec := ag("billing", calls(runner.TransferContextTool, `{"ref":"REF"}`, "report", `{}`), text("done"))
	billing.Model = refFixer{brec}
	billing.Tools = []*agent.Tool{{Name: "report", Slow: true, Func: func(context.Context, json.RawMessage) (string, error) { return "ok", nil }}}
	triage.Transfers = []*transfer.Transfer{{To: "billing"}}
	ck := &memCheckpoints{}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, triage, billing), Checkpointer: ck})
	if _, err := collect(r.Stream(t.Context(), "hi", runner.WithBackgroundBoundary())); err != nil {
		t.Fatal(err)
	}
	b, err := runstate.Encode(ck.Latest(t))
	if err != nil {
		t.Fatal(err)
	}
	old := strings.NewReplacer(`"schema_version":2,`, `"schema_version":1,`, `"transfer":{`, `"handoff":{`, `"transfers":`, `"handoffs":`,
		`"kind":"transfer"`, `"kind":"handoff"`, `"`+runner.TransferContextTool+`"`, `"read_handoff_context"`, `"ref":"transfer:`, `"ref":"handoff:`).Replace(string(b))
	st, err := runstate.Decode([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != runstate.StatusSuspended || len(st.Pending) != 2 || st.Pending[0].Call.Name != "read_handoff_context" ||
		!strings.Contains(string(st.Pending[0].Call.Arguments), `"handoff:`) {
		t.Fatalf("version 1 state: %s, pending %+v", st.Status, st.Pending)
	}
	evs := mustCollect(t, r.ResumeStream(t.Context(), st))
	var got string
	for _, e := range ofType[*runner.ToolResultEvent](evs) {
		if e.Name == "read_handoff_context" {
			got = e.Output
		}
	}
	if got != `"`+long+`"` {
		t.Errorf("the old context call returned %.60q…", got)
	}
	if end := ofType[*runner.RunEndEvent](evs); len(end) != 1 || end[0].Status != runstate.StatusCompleted || end[0].Output != "done" {
		t.Errorf("run end = %+v", end)
	}
}

// refFixer rewrites the placeholder REF to the reference in the system prompt.
type refFixer struct{ *recorder }

var refPattern = regexp.MustCompile(`ref (transfer:\S+/notes)`)

func (f refFixer) Stream(ctx context.Context, req *modelRequest) modelSeq {
	seq := f.recorder.Stream(ctx, req)
	ref := refPattern.FindStringSubmatch(req.System)
	return func(yield func(modelChunk, error) bool) {
		for c, err := range seq {
			if c.Message != nil && ref != nil {
				for i := range c.Message.Parts {
					p := &c.Message.Parts[i]
					if p.Type == message.PartToolCall {
						p.Arguments = json.RawMessage(strings.ReplaceAll(string(p.Arguments), "REF", ref[1]))
					}
				}
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

func TestFirstTransferWins(t *testing.T) {
	t.Parallel()
	ran := 0
	triage, _ := ag("triage", calls(
		"transfer_to_billing", `{"reason":"first"}`,
		"lookup", `{}`,
		"transfer_to_refunds", `{"reason":"second"}`))
	triage.Tools = []*agent.Tool{{Name: "lookup", Func: func(context.Context, json.RawMessage) (string, error) { ran++; return "found", nil }}}
	triage.Transfers = []*transfer.Transfer{{To: "billing"}, {To: "refunds"}}
	billing, _ := ag("billing", text("billing here"))
	refunds, rrec := ag("refunds", text("refunds here"))
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, triage, billing, refunds)})
	evs := mustCollect(t, r.Stream(t.Context(), "help"))
	end := ofType[*runner.RunEndEvent](evs)[0]
	if end.LastAgent != "billing" || end.Transfers != 1 {
		t.Fatalf("run end = %+v, want billing after 1 transfer", end)
	}
	if ran != 1 {
		t.Errorf("ordinary tool ran %d times, want 1", ran)
	}
	if len(rrec.requests()) != 0 {
		t.Error("refunds was called")
	}
	rej := ofType[*runner.TransferRejectedEvent](evs)
	if len(rej) != 1 || rej[0].To != "refunds" || !strings.Contains(rej[0].Error, "not taken") {
		t.Fatalf("rejections = %+v", rej)
	}
	res, _ := r.Run(t.Context(), "help")
	results := toolResults(res.Messages)
	if p := results["call_triage_1_3"]; !p.IsError || !strings.Contains(p.Text, "not taken") {
		t.Errorf("second transfer result = %+v", p)
	}
	if p := results["call_triage_1_2"]; p.IsError || p.Text != "found" {
		t.Errorf("ordinary tool result = %+v", p)
	}
}

func TestPingPongStops(t *testing.T) {
	t.Parallel()
	a, _ := ag("a", calls("transfer_to_b", `{}`), calls("transfer_to_b", `{}`), calls("transfer_to_b", `{}`))
	b, _ := ag("b", calls("transfer_to_a", `{}`), calls("transfer_to_a", `{}`), calls("transfer_to_a", `{}`))
	a.Transfers = []*transfer.Transfer{{To: "b"}}
	b.Transfers = []*transfer.Transfer{{To: "a"}}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{MaxTransfers: 50}, a, b)})
	evs, err := collect(r.Stream(t.Context(), "go"))
	var le *runner.LimitError
	if !errors.As(err, &le) || le.Limit != runner.LimitPingPong {
		t.Fatalf("err = %v, want ping_pong limit", err)
	}
	if runner.KindOf(err) != runner.KindLimit {
		t.Errorf("kind = %s", runner.KindOf(err))
	}
	if hs := ofType[*runner.TransferEvent](evs); len(hs) != 2 {
		t.Errorf("transfers before the stop = %d, want 2 (a→b→a, the next →b stops)", len(hs))
	}
	ee := ofType[*runner.ErrorEvent](evs)
	if len(ee) != 1 || ee[0].Limit != runner.LimitPingPong || ee[0].Kind != runner.KindLimit {
		t.Errorf("error events = %+v", ee)
	}
}

func TestTypedContextRejectedThenAccepted(t *testing.T) {
	t.Parallel()
	triage, trec := ag("triage",
		calls("transfer_to_billing", `{"reason":"no order"}`),
		calls("transfer_to_billing", `{"order_id":"12a","reason":"bad id"}`),
		calls("transfer_to_billing", `{"order_id":"1234","reason":"ok now"}`))
	triage.Transfers = []*transfer.Transfer{{To: "billing", ContextSchema: orderSchema}}
	billing, _ := ag("billing", text("done"))
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, triage, billing)})
	evs := mustCollect(t, r.Stream(t.Context(), "charged twice"))
	rej := ofType[*runner.TransferRejectedEvent](evs)
	if len(rej) != 2 {
		t.Fatalf("rejections = %d, want 2", len(rej))
	}
	if !strings.Contains(rej[0].Error, "order_id") || !strings.Contains(rej[1].Error, "/order_id") {
		t.Errorf("rejection messages do not say what is wrong: %q / %q", rej[0].Error, rej[1].Error)
	}
	// The model saw its error as a tool result before trying again.
	second := trec.requests()[1]
	last := second.Messages[len(second.Messages)-1]
	if last.Role != message.RoleTool || !last.Parts[0].IsError || !strings.Contains(last.Parts[0].Text, "invalid transfer context") {
		t.Errorf("model did not get the validation error: %+v", last)
	}
	hs := ofType[*runner.TransferEvent](evs)
	if len(hs) != 1 || hs[0].Reason != "ok now" {
		t.Fatalf("transfers = %+v", hs)
	}
	if err := message.Validate(second.Messages); err != nil {
		t.Error(err)
	}
}

func TestHistoryPolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		h       transfer.Transfer
		check   func(t *testing.T, msgs []message.Message)
		sysHave string
	}{
		{"Full", transfer.Transfer{To: "b"}, func(t *testing.T, msgs []message.Message) {
			// earlier user + answer, input, a's tool call + result, a's transfer call + result
			if len(msgs) != 7 || msgs[0].Text() != "earlier question" || msgs[2].Text() != "please transfer" || msgs[6].Role != message.RoleTool {
				t.Errorf("full history = %d messages", len(msgs))
			}
		}, ""},
		{"LastUser", transfer.Transfer{To: "b", History: transfer.HistoryLastUser}, func(t *testing.T, msgs []message.Message) {
			if len(msgs) != 1 || msgs[0].Role != message.RoleUser || msgs[0].Text() != "please transfer" {
				t.Errorf("last_user history = %+v", msgs)
			}
		}, ""},
		{"None", transfer.Transfer{To: "b", History: transfer.HistoryNone}, func(t *testing.T, msgs []message.Message) {
			if len(msgs) != 1 || !strings.Contains(msgs[0].Text(), "transferred to you by a") || !strings.Contains(msgs[0].Text(), "needs b") {
				t.Errorf("none history = %+v", msgs)
			}
		}, ""},
		{"SystemMessage", transfer.Transfer{To: "b", History: transfer.HistoryLastUser, SystemMessage: true}, func(t *testing.T, msgs []message.Message) {
			if len(msgs) != 2 || msgs[0].Role != message.RoleSystem || msgs[0].Text() != "You are a." {
				t.Errorf("system message did not travel: %+v", msgs)
			}
		}, ""},
		{"DropToolTraffic", transfer.Transfer{To: "b", Transforms: []transfer.Transform{transfer.DropToolTraffic{}}}, func(t *testing.T, msgs []message.Message) {
			for _, m := range msgs {
				if m.Role == message.RoleTool || m.HasToolCalls() {
					t.Errorf("tool traffic left: %+v", m)
				}
			}
			if len(msgs) != 3 {
				t.Errorf("want the two user messages and the earlier answer, got %d", len(msgs))
			}
		}, ""},
		{"Redact", transfer.Transfer{To: "b", Transforms: []transfer.Transform{transfer.Redact{Patterns: []*regexp.Regexp{regexp.MustCompile(`\d{4}-\d{4}`)}}}}, func(t *testing.T, msgs []message.Message) {
			for _, m := range msgs {
				for _, p := range m.Parts {
					if strings.Contains(p.Text, "1111-2222") || strings.Contains(string(p.Arguments), "1111-2222") {
						t.Errorf("card number left in %+v", p)
					}
				}
			}
			if !strings.Contains(string(msgs[3].Parts[0].Arguments), "[REDACTED]") {
				t.Errorf("arguments not redacted: %s", msgs[3].Parts[0].Arguments)
			}
		}, ""},
		{"Compact", transfer.Transfer{To: "b", Transforms: []transfer.Transform{transfer.Compact{KeepRecent: 2,
			Model: scripted.New("compact", []scripted.Step{text("user asked twice; card looked up")}, scripted.Options{})}}}, func(t *testing.T, msgs []message.Message) {
			if len(msgs) != 3 || !strings.Contains(msgs[0].Text(), "user asked twice") {
				t.Errorf("compacted history = %+v", msgs)
			}
		}, ""},
		{"FailingTransformFallsBack", transfer.Transfer{To: "b", Transforms: []transfer.Transform{
			transfer.Func("boom", func(context.Context, []message.Message) ([]message.Message, error) { return nil, errors.New("boom") }),
			transfer.DropToolTraffic{}}}, func(t *testing.T, msgs []message.Message) {
			if len(msgs) != 3 {
				t.Errorf("after fallback + drop_tool_traffic want 3 messages, got %d", len(msgs))
			}
		}, ""},
		{"CustomTransformOrphansRepaired", transfer.Transfer{To: "b", Transforms: []transfer.Transform{
			transfer.Func("drop_results", func(_ context.Context, msgs []message.Message) ([]message.Message, error) {
				var out []message.Message
				for _, m := range msgs {
					if m.Role != message.RoleTool {
						out = append(out, m)
					}
				}
				return out, nil
			})}}, func(t *testing.T, msgs []message.Message) {
			for _, m := range msgs {
				if m.HasToolCalls() {
					t.Errorf("orphaned call sent on: %+v", m)
				}
			}
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, _ := ag("a", calls("card", `{"number":"1111-2222"}`), calls("transfer_to_b", `{"reason":"needs b"}`))
			a.Tools = []*agent.Tool{agent.StaticTool("card", "", nil, "card 1111-2222 is valid")}
			h := tt.h
			a.Transfers = []*transfer.Transfer{&h}
			b, brec := ag("b", text("b answers"))
			r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a, b)})
			res, err := r.Run(t.Context(), "please transfer", runner.WithHistory([]message.Message{message.User("earlier question"), message.Assistant("a", "earlier answer")}))
			if err != nil {
				t.Fatal(err)
			}
			if res.LastAgent != "b" {
				t.Fatalf("last agent = %s", res.LastAgent)
			}
			msgs := brec.last(t).Messages
			if err := message.Validate(msgs); err != nil {
				t.Fatalf("target history breaks the pairing invariant: %v", err)
			}
			tt.check(t, msgs)
		})
	}
}

func TestGuardrailsNotInherited(t *testing.T) {
	t.Parallel()
	deny := func(name, word string) agent.Guardrail {
		return agent.Guardrail{Name: name, Check: func(_ context.Context, in agent.GuardrailInput) error {
			if strings.Contains(in.Text, word) {
				return agent.Tripwire("mentions " + word)
			}
			return nil
		}}
	}
	build := func() *runner.Runner {
		triage, _ := ag("triage", calls("transfer_to_billing", `{}`))
		triage.OutputGuardrails = []agent.Guardrail{deny("no_refund_talk", "refund")}
		triage.InputGuardrails = []agent.Guardrail{deny("no_passwords", "password")}
		triage.Transfers = []*transfer.Transfer{{To: "billing"}}
		billing, _ := ag("billing", text("your refund is on its way"))
		billing.InputGuardrails = []agent.Guardrail{deny("billing_input", "charged")}
		billing.OutputGuardrails = []agent.Guardrail{deny("no_swearing", "damn")}
		r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, triage, billing)})
		return r
	}
	// Neither triage's output guardrail nor billing's input guardrail applies across the transfer.
	res, err := build().Run(t.Context(), "I was charged twice")
	if err != nil || res.Output != "your refund is on its way" {
		t.Fatalf("run = %+v, %v; guardrails leaked across the transfer", res, err)
	}
	// The receiving agent's own input guardrail does apply to input it receives.
	_, err = build().Run(t.Context(), "my password is hunter2")
	var ge *runner.GuardrailError
	if !errors.As(err, &ge) || ge.Guardrail != "no_passwords" || ge.Phase != "input" || runner.KindOf(err) != runner.KindUserInput {
		t.Fatalf("err = %v, want input guardrail no_passwords (user_input)", err)
	}
}

func TestAgentToolsRunConcurrently(t *testing.T) {
	t.Parallel()
	mgr, _ := ag("manager", calls("ask_a", `{"input":"question for a"}`, "ask_b", `{"input":"question for b"}`), text("combined"))
	mgr.AgentTools = []*agent.AgentTool{{Agent: "a"}, {Agent: "b"}}
	// Both specialists wait until both have started: this only finishes when they run at once.
	started := make(chan string, 2)
	release := make(chan struct{})
	barrier := func(name string) *agent.Agent {
		inner, rec := ag(name, text(name+" answer"))
		inner.Model = modelFunc(func(ctx context.Context, req *modelRequest) modelSeq {
			started <- name
			select {
			case <-release:
			case <-ctx.Done():
			}
			return rec.Stream(ctx, req)
		})
		return inner
	}
	a, b := barrier("a"), barrier("b")
	go func() {
		<-started
		<-started
		close(release)
	}()
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, mgr, a, b)})
	res, err := r.Run(t.Context(), "ask both")
	if err != nil {
		t.Fatal(err)
	}
	results := toolResults(res.Messages)
	if results["call_manager_1_1"].Text != "a answer" || results["call_manager_1_2"].Text != "b answer" {
		t.Errorf("agent tool results = %+v", results)
	}
	if res.LastAgent != "manager" || res.Transfers != 0 || res.Output != "combined" {
		t.Errorf("manager did not keep control: %+v", res)
	}
}

func TestReturnToCaller(t *testing.T) {
	t.Parallel()
	lead, lrec := ag("lead", calls("transfer_to_expert", `{"reason":"need numbers"}`), text("final: using the expert's 42"))
	lead.Transfers = []*transfer.Transfer{{To: "expert", Return: true}}
	expert, _ := ag("expert", text("the answer is 42"))
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, lead, expert)})
	evs := mustCollect(t, r.Stream(t.Context(), "what is it?"))
	hs := ofType[*runner.TransferEvent](evs)
	if len(hs) != 2 || hs[0].TransferType != transfer.TypeReturn || hs[1].TransferType != transfer.TypeReturned || hs[1].To != "lead" {
		t.Fatalf("transfers = %+v", hs)
	}
	end := ofType[*runner.RunEndEvent](evs)[0]
	if end.LastAgent != "lead" || end.Output != "final: using the expert's 42" {
		t.Fatalf("end = %+v", end)
	}
	back := lrec.last(t).Messages
	if last := back[len(back)-1]; last.Agent != "expert" || last.Text() != "the answer is 42" {
		t.Errorf("caller history does not end with the expert's answer: %+v", last)
	}
	if err := message.Validate(back); err != nil {
		t.Error(err)
	}
}
