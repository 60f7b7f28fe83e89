package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/policy"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/transfer"
)

func TestLimits(t *testing.T) {
	t.Parallel()
	loopTool := func() *agent.Agent {
		a, _ := ag("a", calls("noop", `{}`), calls("noop", `{}`), calls("noop", `{}`), calls("noop", `{}`), text("done"))
		a.Tools = []*agent.Tool{agent.StaticTool("noop", "", nil, "ok")}
		return a
	}
	chain := func() []*agent.Agent {
		var out []*agent.Agent
		for i := range 4 {
			name := "c" + string(rune('0'+i))
			next := "c" + string(rune('0'+i+1))
			if i == 3 {
				a, _ := ag(name, text("end"))
				out = append(out, a)
				break
			}
			a, _ := ag(name, calls("transfer_to_"+next, `{}`))
			a.Transfers = []*transfer.Transfer{{To: next}}
			out = append(out, a)
		}
		return out
	}
	slow := func() *agent.Agent {
		a, _ := ag("a", scripted.Step{Text: "late", Delay: time.Second})
		return a
	}
	tests := []struct {
		name   string
		agents func() []*agent.Agent
		limits agent.Limits
		want   string
	}{
		{"MaxTurns", func() []*agent.Agent { return []*agent.Agent{loopTool()} }, agent.Limits{MaxTurns: 3}, runner.LimitMaxTurns},
		{"MaxTransfers", chain, agent.Limits{MaxTransfers: 2}, runner.LimitMaxTransfers},
		{"TokenBudget", func() []*agent.Agent { return []*agent.Agent{loopTool()} }, agent.Limits{TokenBudget: 10}, runner.LimitTokenBudget},
		{"Timeout", func() []*agent.Agent { return []*agent.Agent{slow()} }, agent.Limits{Timeout: 20 * time.Millisecond}, runner.LimitTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, _ := newRunner(t, runner.Config{Network: network(t, tt.limits, tt.agents()...)})
			evs, err := collect(r.Stream(t.Context(), "go"))
			var le *runner.LimitError
			if !errors.As(err, &le) || le.Limit != tt.want {
				t.Fatalf("err = %v, want limit %s", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error text does not name the limit: %v", err)
			}
			ee := ofType[*runner.ErrorEvent](evs)
			if len(ee) != 1 || ee[0].Limit != tt.want || ee[0].Kind != runner.KindLimit {
				t.Errorf("error event = %+v", ee)
			}
			end := ofType[*runner.RunEndEvent](evs)
			if len(end) != 1 || end[0].Status != runstate.StatusFailed {
				t.Errorf("run end = %+v", end)
			}
		})
	}
	t.Run("FinalAnswer", func(t *testing.T) {
		t.Parallel()
		a, rec := ag("a", calls("noop", `{}`), calls("noop", `{}`), text("best effort answer"))
		a.Tools = []*agent.Tool{agent.StaticTool("noop", "", nil, "ok")}
		r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{MaxTurns: 2, OnLimit: "final_answer"}, a)})
		res, err := r.Run(t.Context(), "go")
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != runstate.StatusCompleted || res.Output != "best effort answer" || res.Limit != runner.LimitMaxTurns {
			t.Fatalf("result = %+v", res)
		}
		if last := rec.last(t); len(last.Tools) != 0 {
			t.Errorf("final call still offered %d tools", len(last.Tools))
		}
	})
	t.Run("FinalAnswerOnTransferLimit", func(t *testing.T) {
		t.Parallel()
		agents := chain()
		agents[1].Model = scripted.New("c1", []scripted.Step{calls("transfer_to_c2", `{}`), text("c1 wraps up")}, scripted.Options{})
		r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{MaxTransfers: 1, OnLimit: "final_answer"}, agents...)})
		res, err := r.Run(t.Context(), "go")
		if err != nil {
			t.Fatal(err)
		}
		if res.LastAgent != "c1" || res.Output != "c1 wraps up" || res.Limit != runner.LimitMaxTransfers {
			t.Fatalf("result = %+v", res)
		}
		if err := message.Validate(res.State.Messages); err != nil {
			t.Error(err)
		}
	})
}

func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	a, _ := ag("a", scripted.Step{Text: "ok", Fail: &scripted.Fail{Status: 429, Transient: true, RetryAfter: 7 * time.Second, Times: 2}})
	r, s := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a)})
	res, err := r.Run(t.Context(), "hi")
	if err != nil || res.Output != "ok" {
		t.Fatalf("run = %+v, %v", res, err)
	}
	if len(s.Waits()) != 2 || s.Waits()[0] != 7*time.Second || s.Waits()[1] != 7*time.Second {
		t.Fatalf("waits = %v, want [7s 7s]", s.Waits())
	}

	t.Run("BackoffWithoutRetryAfter", func(t *testing.T) {
		a, _ := ag("a", scripted.Step{Text: "ok", Fail: &scripted.Fail{Status: 503, Transient: true, Times: 3}})
		r, s := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Retry: runner.RetryPolicy{BaseDelay: 100 * time.Millisecond}})
		if _, err := r.Run(t.Context(), "hi"); err != nil {
			t.Fatal(err)
		}
		// Exponential with jitter in [d/2, d]: 100ms, 200ms, 400ms.
		for i, d := range s.Waits() {
			hi := 100 * time.Millisecond << i
			if d < hi/2 || d > hi {
				t.Errorf("wait %d = %v, want within [%v, %v]", i, d, hi/2, hi)
			}
		}
	})
	t.Run("TransientExhausted", func(t *testing.T) {
		a, _ := ag("a", scripted.Step{Text: "never", Fail: &scripted.Fail{Status: 529, Message: "overloaded", Transient: true}})
		r, s := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Retry: runner.RetryPolicy{MaxAttempts: 3}})
		_, err := r.Run(t.Context(), "hi")
		var me *model.Error
		if runner.KindOf(err) != runner.KindModelTransient || !errors.As(err, &me) || me.StatusCode != 529 {
			t.Fatalf("err = %v (kind %s), want model_transient wrapping the 529", err, runner.KindOf(err))
		}
		if len(s.Waits()) != 2 {
			t.Errorf("waits = %d, want 2 for 3 attempts", len(s.Waits()))
		}
	})
	t.Run("PermanentNotRetried", func(t *testing.T) {
		a, _ := ag("a", scripted.Step{Text: "never", Fail: &scripted.Fail{Status: 400, Message: "context length exceeded"}})
		r, s := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a)})
		_, err := r.Run(t.Context(), "hi")
		if runner.KindOf(err) != runner.KindSystem || !strings.Contains(err.Error(), "context length") || len(s.Waits()) != 0 {
			t.Fatalf("err = %v, waits %v", err, s.Waits())
		}
	})
	t.Run("ToolTransientRetried", func(t *testing.T) {
		var n atomic.Int32
		a, _ := ag("a", calls("flaky", `{}`), text("done"))
		a.Tools = []*agent.Tool{{Name: "flaky", Func: func(context.Context, json.RawMessage) (string, error) {
			if n.Add(1) < 3 {
				return "", agent.Transient(errors.New("upstream 503"), 2*time.Second)
			}
			return "fine", nil
		}}}
		r, s := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a)})
		res, err := r.Run(t.Context(), "hi")
		if err != nil || toolResults(res.Messages)["call_a_1_1"].Text != "fine" {
			t.Fatalf("run = %+v, %v", res, err)
		}
		if len(s.Waits()) != 2 || s.Waits()[0] != 2*time.Second {
			t.Errorf("waits = %v, want [2s 2s]", s.Waits())
		}
	})
	t.Run("ToolTransientExhausted", func(t *testing.T) {
		a, _ := ag("a", calls("down", `{}`), text("done"))
		a.Tools = []*agent.Tool{{Name: "down", Func: func(context.Context, json.RawMessage) (string, error) {
			return "", agent.Transient(errors.New("still down"), 0)
		}}}
		r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a)})
		_, err := r.Run(t.Context(), "hi")
		if runner.KindOf(err) != runner.KindToolTransient {
			t.Fatalf("err = %v (kind %s), want tool_transient", err, runner.KindOf(err))
		}
	})
}

func TestToolFailuresGoToTheModel(t *testing.T) {
	t.Parallel()
	a, rec := ag("a", calls(
		"nosuch", `{}`,
		"typed", `{"n":"not a number"}`,
		"typed", `[1,2]`,
		"boom", `{}`,
		"panics", `{}`,
	), text("handled"))
	var key string
	a.Tools = []*agent.Tool{
		agent.FuncTool("typed", "", func(ctx context.Context, in struct {
			N int `json:"n"`
		}) (int, error) {
			ci, _ := agent.CallFromContext(ctx)
			key = ci.IdempotencyKey
			return in.N * 2, nil
		}),
		{Name: "boom", Func: func(context.Context, json.RawMessage) (string, error) { return "", errors.New("card declined") }},
		{Name: "panics", Func: func(context.Context, json.RawMessage) (string, error) { panic("kaboom") }},
	}
	// Checkpointed as a store would: the call of a tool the agent does not
	// have is a valid pending call.
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: &memCheckpoints{}})
	res, err := r.Run(t.Context(), "hi")
	if err != nil || res.Output != "handled" {
		t.Fatalf("run = %+v, %v", res, err)
	}
	results := toolResults(res.Messages)
	for id, want := range map[string]string{
		"call_a_1_1": `unknown tool "nosuch"`,
		"call_a_1_2": "invalid arguments for typed: at /n",
		"call_a_1_3": "arguments must be a JSON object",
		"call_a_1_4": "card declined",
		"call_a_1_5": "panicked: kaboom",
	} {
		if p := results[id]; !p.IsError || !strings.Contains(p.Text, want) {
			t.Errorf("%s = %+v, want error containing %q", id, p, want)
		}
	}
	if key != "" {
		t.Errorf("typed ran with invalid arguments (key %q)", key)
	}
	if err := message.Validate(rec.last(t).Messages); err != nil {
		t.Error(err)
	}

	t.Run("IdempotencyKey", func(t *testing.T) {
		a, _ := ag("a", calls("typed", `{"n":2}`), text("ok"))
		a.Tools = []*agent.Tool{agent.FuncTool("typed", "", func(ctx context.Context, in struct {
			N int `json:"n"`
		}) (int, error) {
			ci, _ := agent.CallFromContext(ctx)
			key = ci.IdempotencyKey
			return in.N, nil
		})}
		r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a)})
		res, err := r.Run(t.Context(), "hi", runner.WithRunID("run-7"))
		if err != nil {
			t.Fatal(err)
		}
		if key != "run-7:call_a_1_1" || toolResults(res.Messages)["call_a_1_1"].Text != "2" {
			t.Errorf("key = %q, results %+v", key, toolResults(res.Messages))
		}
	})
}

func TestScriptedErrorsNameAgentAndStep(t *testing.T) {
	t.Parallel()
	a, _ := ag("a", calls("noop", `{}`))
	a.Tools = []*agent.Tool{agent.StaticTool("noop", "", nil, "ok")}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a)})
	_, err := r.Run(t.Context(), "hi")
	var se *scripted.ScriptError
	if !errors.As(err, &se) || se.Agent != "a" || se.Step != 1 || !strings.Contains(err.Error(), "agent a, step 2: script exhausted") {
		t.Fatalf("err = %v", err)
	}
	if runner.KindOf(err) != runner.KindSystem {
		t.Errorf("kind = %s", runner.KindOf(err))
	}
	b, _ := ag("b", when("(?i)refund", text("refund!")))
	r, _ = newRunner(t, runner.Config{Network: network(t, agent.Limits{}, b)})
	_, err = r.Run(t.Context(), "hello")
	if err == nil || !strings.Contains(err.Error(), "agent b, step 1: no step") || !strings.Contains(err.Error(), `"hello"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestPoliciesAndPickers(t *testing.T) {
	t.Parallel()
	t.Run("Sequential", func(t *testing.T) {
		t.Parallel()
		research, _ := ag("research", text("facts: 1, 2"))
		analysis, arec := ag("analysis", text("analysis of facts"))
		report, _ := ag("report", text("report"))
		r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, research, analysis, report),
			Policy: policy.Sequential{Steps: []string{"research", "analysis", "report"}}})
		res, err := r.Run(t.Context(), "study EVs")
		if err != nil || res.LastAgent != "report" || res.Transfers != 2 || res.Output != "report" {
			t.Fatalf("run = %+v, %v", res, err)
		}
		in := arec.last(t).Messages
		if len(in) != 1 || !strings.Contains(in[0].Text(), "study EVs") || !strings.Contains(in[0].Text(), "facts: 1, 2") {
			t.Errorf("analysis input = %+v", in)
		}
	})
	t.Run("RuleOnState", func(t *testing.T) {
		t.Parallel()
		a, _ := ag("a", calls("lookup", `{}`), text("unreachable"))
		a.Tools = []*agent.Tool{agent.StaticTool("lookup", "", nil, `{"vip":true}`)}
		vip, _ := ag("vip", text("white glove"))
		rules := policy.Rules{{Name: "vip", From: "a", At: policy.AfterTools, To: "vip", When: func(_ context.Context, v *policy.View) bool {
			return strings.Contains(v.Messages[len(v.Messages)-1].Parts[0].Text, `"vip":true`)
		}}}
		r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a, vip), Policy: policy.Composite{rules, policy.Explicit{}}})
		evs := mustCollect(t, r.Stream(t.Context(), "hi"))
		hs := ofType[*runner.TransferEvent](evs)
		if len(hs) != 1 || hs[0].TransferType != transfer.TypeRule || hs[0].Reason != "rule vip" {
			t.Fatalf("transfers = %+v", hs)
		}
	})
	mk := func() (*agent.Network, *agent.Agent) {
		tri, _ := ag("triage", text("triage"))
		bil, _ := ag("billing", text("billing"))
		ref, _ := ag("refunds", text("refunds"))
		return network(t, agent.Limits{}, tri, bil, ref), tri
	}
	t.Run("RulePicker", func(t *testing.T) {
		t.Parallel()
		n, _ := mk()
		p := policy.Chain{Pickers: []policy.Picker{policy.RulePicker{{Match: regexp.MustCompile(`(?i)invoice`), Agent: "billing"}, {Keywords: []string{"Refund"}, Agent: "refunds"}}}}
		r, _ := newRunner(t, runner.Config{Network: n, Picker: p})
		for in, want := range map[string]string{"my INVOICE": "billing", "a refund please": "refunds", "hello": "triage"} {
			res, err := r.Run(t.Context(), in)
			if err != nil || res.LastAgent != want {
				t.Errorf("%q → %v (%v), want %s", in, res.LastAgent, err, want)
			}
		}
	})
	t.Run("Sticky", func(t *testing.T) {
		t.Parallel()
		n, _ := mk()
		r, _ := newRunner(t, runner.Config{Network: n, Picker: policy.Chain{Pickers: []policy.Picker{policy.Sticky{}}, Default: "triage"}})
		res, err := r.Run(t.Context(), "again", runner.WithLastAgent("refunds"))
		if err != nil || res.LastAgent != "refunds" {
			t.Fatalf("sticky → %+v, %v", res, err)
		}
		res, _ = r.Run(t.Context(), "new thread")
		if res.LastAgent != "triage" {
			t.Fatalf("default → %s", res.LastAgent)
		}
	})
	t.Run("Classifier", func(t *testing.T) {
		t.Parallel()
		n, _ := mk()
		rec := &recorder{m: scripted.New("picker", []scripted.Step{
			when("charged", text(`{"agent":"billing","reason":"charge"}`)),
			when("nonsense", text(`{"agent":"nobody","reason":"?"}`)),
		}, scripted.Options{})}
		cl := &policy.Classifier{Model: rec, Candidates: []policy.Candidate{{Name: "billing", Description: "charges"}, {Name: "refunds", Description: "money back"}}}
		r, _ := newRunner(t, runner.Config{Network: n, Picker: policy.Chain{Pickers: []policy.Picker{cl}, Default: "triage"}})
		evs := mustCollect(t, r.Stream(t.Context(), "I was charged twice"))
		if st := ofType[*runner.AgentStartEvent](evs)[0]; st.Agent != "billing" || !strings.Contains(st.Reason, "classifier") {
			t.Fatalf("agent start = %+v", st)
		}
		if req := rec.last(t); req.Output == nil || !strings.Contains(string(req.Output.Schema), `"enum":["billing","refunds"]`) {
			t.Errorf("classifier did not ask for structured output: %+v", req.Output)
		}
		_, err := r.Run(t.Context(), "nonsense")
		if !errors.Is(err, policy.ErrClassifier) {
			t.Fatalf("answer outside the candidates: err = %v", err)
		}
		cl.Lenient = true
		res, err := r.Run(t.Context(), "nonsense")
		if err != nil || res.LastAgent != "triage" {
			t.Fatalf("lenient classifier falls back to the default: %+v, %v", res, err)
		}
	})
}

func approvalNetwork(t *testing.T) (*agent.Network, *atomic.Int32) {
	var refunds atomic.Int32
	a, _ := ag("refunds", calls("issue_refund", `{"amount":10}`), text("refund done"))
	a.Tools = []*agent.Tool{{Name: "issue_refund", Func: func(_ context.Context, args json.RawMessage) (string, error) {
		refunds.Add(1)
		return "refunded " + string(args), nil
	}, RequireApproval: func(context.Context, json.RawMessage) bool { return true }}}
	return network(t, agent.Limits{}, a), &refunds
}

func TestInterruptAndResume(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		decision runner.Decision
		want     string // tool result
		isErr    bool
		calls    int32
	}{
		{"Approve", runner.Decision{Type: runner.DecisionApprove}, `refunded {"amount":10}`, false, 1},
		{"Edit", runner.Decision{Type: runner.DecisionEdit, Args: json.RawMessage(`{"amount":5}`)}, `refunded {"amount":5}`, false, 1},
		{"Reject", runner.Decision{Type: runner.DecisionReject, Message: "too much"}, "rejected by a human reviewer: too much", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n, count := approvalNetwork(t)
			ck := &memCheckpoints{}
			r, _ := newRunner(t, runner.Config{Network: n, Checkpointer: ck})
			res, err := r.Run(t.Context(), "refund me")
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != runstate.StatusInterrupted || res.Interrupt == nil || count.Load() != 0 {
				t.Fatalf("result = %+v (tool ran %d times)", res, count.Load())
			}
			ir := res.Interrupt
			if ir.SchemaVersion != 1 || ir.Source != "tool_approval" || len(ir.ActionRequests) != 1 || ir.ActionRequests[0].Name != "issue_refund" {
				t.Fatalf("interrupt = %+v", ir)
			}
			// Resume from what the store holds, as another process would.
			st := ck.Latest(t)
			if _, err := r.Resume(t.Context(), roundTrip(t, st)); runner.KindOf(err) != runner.KindUserInput {
				t.Fatalf("resume without a decision: err = %v", err)
			}
			res, err = r.Resume(t.Context(), st, runner.WithDecisions(tt.decision))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != runstate.StatusCompleted || res.Output != "refund done" || count.Load() != tt.calls {
				t.Fatalf("after resume: %+v (tool ran %d times)", res, count.Load())
			}
			p := toolResults(res.State.Transcript)[ir.ActionRequests[0].CallID]
			if p.Text != tt.want || p.IsError != tt.isErr {
				t.Errorf("tool result = %+v, want %q", p, tt.want)
			}
		})
	}
}

// TestEditValidatedAgainstSchema: an approval edit whose arguments the
// tool's JSON Schema refuses (or that are not one JSON object) fails the
// resume with kind user_input and an *EditError naming the call and the
// schema error, before anything runs or is written; the interrupt stays
// pending, and a valid edit of the same state then runs the tool once.
func TestEditValidatedAgainstSchema(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	a, _ := ag("refunds", calls("issue_refund", `{"amount":10,"currency":"EUR"}`), text("refund done"))
	a.Tools = []*agent.Tool{{Name: "issue_refund",
		Parameters: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer","minimum":1,"maximum":100},"currency":{"enum":["EUR","USD"]}},"required":["amount"],"additionalProperties":false}`),
		Func: func(_ context.Context, args json.RawMessage) (string, error) {
			runs.Add(1)
			return "refunded " + string(args), nil
		},
		RequireApproval: func(context.Context, json.RawMessage) bool { return true }}}
	ck := &memCheckpoints{}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: ck})
	res, err := r.Run(t.Context(), "refund me")
	if err != nil || res.Status != runstate.StatusInterrupted {
		t.Fatalf("run: %+v, %v", res, err)
	}
	ir := res.Interrupt
	callID := ir.ActionRequests[0].CallID
	saved := ck.Len()
	for _, tc := range []struct {
		name, args, want string
		callID           string
	}{
		{"WrongType", `{"amount":"lots"}`, "/amount", callID},
		{"OverMaximum", `{"amount":1000}`, "/amount", ""},
		{"Missing", `{"currency":"EUR"}`, "amount", callID},
		{"Unknown", `{"amount":5,"iban":"x"}`, "iban", callID},
		{"NotInEnum", `{"amount":5,"currency":"GBP"}`, "/currency", callID},
		{"NotAnObject", `[1]`, "must be a JSON object", callID},
		{"NotJSON", `{"amount":`, "not valid JSON", callID},
	} {
		st := ck.Latest(t)
		_, err := r.Resume(t.Context(), st, runner.WithDecisions(runner.Decision{Type: runner.DecisionEdit, CallID: tc.callID, Args: json.RawMessage(tc.args)}))
		var ee *runner.EditError
		if runner.KindOf(err) != runner.KindUserInput || !errors.As(err, &ee) {
			t.Fatalf("%s: err = %v, want a user_input *EditError", tc.name, err)
		}
		var ae *agent.ArgumentError
		if ee.CallID != callID || ee.InterruptID != ir.ID || ee.Tool != "issue_refund" || !errors.As(err, &ae) || !strings.Contains(ae.Detail, tc.want) {
			t.Errorf("%s: %+v (%v), want the call, the interrupt and %q", tc.name, ee, err, tc.want)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: message %q does not name %q", tc.name, err, tc.want)
		}
		// The state given is untouched: still interrupted, its call not approved.
		if st.Status != runstate.StatusInterrupted || st.Interrupt == nil || st.Pending[0].Approved || string(st.Pending[0].Call.Arguments) != `{"amount":10,"currency":"EUR"}` {
			t.Errorf("%s: state changed: %s %+v %+v", tc.name, st.Status, st.Interrupt, st.Pending[0])
		}
	}
	if runs.Load() != 0 || ck.Len() != saved {
		t.Fatalf("refused edits ran the tool %d times, wrote %d checkpoints", runs.Load(), ck.Len()-saved)
	}
	if st := ck.Latest(t); st.Status != runstate.StatusInterrupted || st.Interrupt == nil || st.Interrupt.ID != ir.ID {
		t.Fatalf("interrupt no longer pending: %s %+v", st.Status, st.Interrupt)
	}
	res, err = r.Resume(t.Context(), ck.Latest(t), runner.WithDecisions(runner.Decision{Type: runner.DecisionEdit, Args: json.RawMessage(" {\"amount\":5} ")}))
	if err != nil || res.Status != runstate.StatusCompleted || runs.Load() != 1 {
		t.Fatalf("valid edit: %+v, %v (tool ran %d times)", res, err, runs.Load())
	}
	if p := toolResults(res.State.Transcript)[callID]; p.Text != `refunded {"amount":5}` {
		t.Errorf("tool result %+v", p)
	}
}

func TestBackgroundBoundaryAndResume(t *testing.T) {
	t.Parallel()
	build := func() (*runner.Runner, *memCheckpoints, *atomic.Int32) {
		var runs atomic.Int32
		a, _ := ag("a", calls("report", `{"q":1}`), text("report ready"))
		a.Tools = []*agent.Tool{{Name: "report", Slow: true, Func: func(context.Context, json.RawMessage) (string, error) {
			runs.Add(1)
			return "42 pages", nil
		}}}
		ck := &memCheckpoints{}
		r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: ck})
		return r, ck, &runs
	}
	inline, _, _ := build()
	want, err := inline.Run(t.Context(), "make a report", runner.WithRunID("r1"))
	if err != nil {
		t.Fatal(err)
	}
	r, ck, runs := build()
	evs := mustCollect(t, r.Stream(t.Context(), "make a report", runner.WithRunID("r1"), runner.WithBackgroundBoundary()))
	sus := ofType[*runner.SuspendedEvent](evs)
	if len(sus) != 1 || sus[0].Calls[0] != "call_a_1_1" || runs.Load() != 0 {
		t.Fatalf("suspended = %+v, tool ran %d", sus, runs.Load())
	}
	st := ck.Latest(t)
	if st.Status != runstate.StatusSuspended || len(st.Pending) != 1 {
		t.Fatalf("checkpoint = %s with %d pending", st.Status, len(st.Pending))
	}
	lastSeq := evs[len(evs)-1].Sequence()
	evs2 := mustCollect(t, r.ResumeStream(t.Context(), roundTrip(t, st)))
	if evs2[0].Sequence() != lastSeq+1 {
		t.Errorf("resumed events start at seq %d, want %d", evs2[0].Sequence(), lastSeq+1)
	}
	end := ofType[*runner.RunEndEvent](evs2)[0]
	if end.Status != runstate.StatusCompleted || runs.Load() != 1 {
		t.Fatalf("end = %+v, tool ran %d", end, runs.Load())
	}
	final := ck.Latest(t)
	if got, w := transcriptShape(final.Transcript), transcriptShape(want.Messages); got != w {
		t.Errorf("transcript after background resume:\n%s\nwant (all inline):\n%s", got, w)
	}
}

func transcriptShape(msgs []message.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(string(m.Role) + "/" + m.Agent + ":" + m.Text())
		for _, p := range m.Parts {
			if p.Type == message.PartToolCall || p.Type == message.PartToolResult {
				b.WriteString(" [" + p.CallID + " " + p.Name + " " + string(p.Arguments) + p.Text + "]")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestResumeAfterCrashMatchesUninterruptedRun(t *testing.T) {
	t.Parallel()
	build := func(block chan struct{}) (*runner.Runner, *memCheckpoints, *atomic.Int32) {
		var lookups atomic.Int32
		triage, _ := ag("triage", calls("transfer_to_billing", `{"reason":"charge"}`))
		triage.Transfers = []*transfer.Transfer{{To: "billing"}}
		billing, _ := ag("billing", calls("lookup", `{}`), calls("refund", `{}`), text("all done"))
		billing.Tools = []*agent.Tool{
			{Name: "lookup", Func: func(context.Context, json.RawMessage) (string, error) { lookups.Add(1); return "order", nil }},
			{Name: "refund", Func: func(ctx context.Context, _ json.RawMessage) (string, error) {
				if block != nil {
					close(block) // the "process" dies here, mid-tool
					<-ctx.Done()
					return "", ctx.Err()
				}
				return "refunded", nil
			}},
		}
		ck := &memCheckpoints{}
		r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, triage, billing), Checkpointer: ck})
		return r, ck, &lookups
	}
	clean, _, _ := build(nil)
	want, err := clean.Run(t.Context(), "charged twice", runner.WithRunID("same"))
	if err != nil {
		t.Fatal(err)
	}
	block := make(chan struct{})
	crashing, ck, lookups := build(block)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-block; cancel() }()
	if _, err := crashing.Run(ctx, "charged twice", runner.WithRunID("same")); !errors.Is(err, context.Canceled) {
		t.Fatalf("crashed run: err = %v", err)
	}
	st := ck.Latest(t)
	if st.Status != runstate.StatusRunning || st.Agent != "billing" || len(st.Pending) != 1 || st.Pending[0].Call.Name != "refund" {
		t.Fatalf("last checkpoint: status %s agent %s pending %+v", st.Status, st.Agent, st.Pending)
	}
	// A new process: fresh runner, state from the store.
	fresh, _, freshLookups := build(nil)
	res, err := fresh.Resume(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	if got, w := transcriptShape(res.Messages), transcriptShape(want.Messages); got != w {
		t.Errorf("resumed transcript:\n%s\nwant:\n%s", got, w)
	}
	if res.Turns != want.Turns || res.Transfers != want.Transfers || res.Usage != want.Usage {
		t.Errorf("counters after resume: turns %d transfers %d usage %+v, want %d %d %+v", res.Turns, res.Transfers, res.Usage, want.Turns, want.Transfers, want.Usage)
	}
	if lookups.Load() != 1 || freshLookups.Load() != 0 {
		t.Errorf("lookup ran %d+%d times; a recorded result must not run again", lookups.Load(), freshLookups.Load())
	}
}

func TestResumeRefusesOtherNetworkVersion(t *testing.T) {
	t.Parallel()
	n, _ := approvalNetwork(t)
	ck := &memCheckpoints{}
	r, _ := newRunner(t, runner.Config{Network: n, Checkpointer: ck})
	if _, err := r.Run(t.Context(), "refund me"); err != nil {
		t.Fatal(err)
	}
	a, _ := ag("refunds", text("changed"))
	a.Instructions = "different instructions"
	other, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a)})
	st := ck.Latest(t)
	_, err := other.Resume(t.Context(), st, runner.WithDecisions(runner.Decision{Type: runner.DecisionApprove}))
	var ie *runstate.IncompatibleError
	if !errors.As(err, &ie) || ie.Checkpoint != n.Fingerprint() || ie.Current != other.Network().Fingerprint() {
		t.Fatalf("err = %v, want IncompatibleError naming both fingerprints", err)
	}
	if !strings.Contains(err.Error(), n.Fingerprint()) || !strings.Contains(err.Error(), other.Network().Fingerprint()) {
		t.Errorf("message does not name both fingerprints: %v", err)
	}
	if st.Status != runstate.StatusInterrupted || st.Interrupt == nil {
		t.Error("refused resume changed the state")
	}
}

func TestStreamEvents(t *testing.T) {
	t.Parallel()
	triage := &agent.Agent{Name: "triage", Model: scripted.New("triage", []scripted.Step{{Text: "one two three four", ToolCalls: []scripted.Call{{Name: "transfer_to_b", Arguments: json.RawMessage(`{"reason":"r"}`)}}}}, scripted.Options{ChunkWords: 2})}
	triage.Transfers = []*transfer.Transfer{{To: "b"}}
	b, _ := ag("b", text("bye"))
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, triage, b)})
	evs := mustCollect(t, r.Stream(t.Context(), "hi", runner.WithThread("t1")))
	var types []string
	for i, e := range evs {
		if e.Sequence() != i+1 {
			t.Fatalf("event %d has seq %d", i, e.Sequence())
		}
		types = append(types, string(e.EventType()))
	}
	want := "run_start agent_start text_delta text_delta message tool_call tool_result transfer agent_start text_delta message run_end"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	b0, _ := json.Marshal(evs[0])
	if !strings.Contains(string(b0), `"type":"run_start","seq":1`) || !strings.Contains(string(b0), `"thread_id":"t1"`) {
		t.Errorf("run_start JSON = %s", b0)
	}
	// Breaking out of the stream stops the run.
	n := 0
	for range r.Stream(t.Context(), "hi") {
		n++
		if n == 3 {
			break
		}
	}
}

func TestEmptyInputIsUserError(t *testing.T) {
	t.Parallel()
	a, _ := ag("a", text("x"))
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a)})
	_, err := r.Run(t.Context(), "")
	if runner.KindOf(err) != runner.KindUserInput || !errors.Is(err, runner.ErrInputEmpty) {
		t.Fatalf("err = %v", err)
	}
}

func TestResumeAfterTransientFailure(t *testing.T) {
	t.Parallel()
	a, _ := ag("a", scripted.Step{Text: "back", Fail: &scripted.Fail{Status: 503, Transient: true, Times: 3}})
	ck := &memCheckpoints{}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: ck, Retry: runner.RetryPolicy{MaxAttempts: 2}})
	_, err := r.Run(t.Context(), "hi")
	if runner.KindOf(err) != runner.KindModelTransient {
		t.Fatalf("err = %v", err)
	}
	st := ck.Latest(t)
	if st.Status != runstate.StatusFailed || st.Failure == nil || st.Failure.Kind != string(runner.KindModelTransient) {
		t.Fatalf("failure checkpoint = %s %+v", st.Status, st.Failure)
	}
	res, err := r.Resume(t.Context(), st)
	if err != nil || res.Output != "back" || res.State.Failure != nil {
		t.Fatalf("resume = %+v, %v", res, err)
	}
	// A permanent failure is final.
	b, _ := ag("b", scripted.Step{Text: "x", Fail: &scripted.Fail{Status: 400}})
	ck2 := &memCheckpoints{}
	r2, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, b), Checkpointer: ck2})
	_, _ = r2.Run(t.Context(), "hi")
	if _, err := r2.Resume(t.Context(), ck2.Latest(t)); runner.KindOf(err) != runner.KindUserInput {
		t.Fatalf("resume of a permanent failure: %v", err)
	}
}
