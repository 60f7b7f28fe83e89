package eval_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/eval"
	"github.com/batonhq/baton/eval/evalset"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
)

// TestExport turns stored threads into cases, on SQLite and PostgreSQL.
func TestExport(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		st := open(t)
		before := time.Now().Add(-time.Second)
		ids := record(t, st, conversations...)
		t.Run("Thread", func(t *testing.T) { exportThread(t, st, ids[0]) })
		t.Run("Since", func(t *testing.T) { exportSince(t, st, before, ids) })
		t.Run("WithoutNetwork", func(t *testing.T) { exportWithoutNetwork(t, st, ids[2]) })
		t.Run("OtherVersion", func(t *testing.T) { exportOtherVersion(t, st, ids[2]) })
		t.Run("PolicyTransfers", func(t *testing.T) { exportPipeline(t, st) })
		t.Run("Placeholder", func(t *testing.T) { exportPlaceholder(t, st) })
		t.Run("Fork", func(t *testing.T) { exportFork(t, st, ids[0]) })
	})
}

func export(t *testing.T, st store.Store, o eval.ExportOptions) *eval.ExportResult {
	t.Helper()
	if o.Owner == "" {
		o.Owner = "acme"
	}
	res, err := eval.Export(t.Context(), st, o)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := evalset.Write(&b, res.Set, evalset.FormatYAML, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := evalset.Parse(b.Bytes(), "export.yaml"); err != nil {
		t.Fatalf("the exported set does not parse: %v\n%s", err, b.String())
	}
	return res
}

// exportThread: a thread of two turns, its recording and expectations.
func exportThread(t *testing.T, st store.Store, id string) {
	spec := support(t, supportFile)
	res := export(t, st, eval.ExportOptions{Threads: []string{id}, Network: spec})
	if len(res.Warnings) != 0 || len(res.Set.Cases) != 1 {
		t.Fatalf("export = %+v", res)
	}
	c := res.Set.Cases[0]
	if c.ID != "thread-"+id || len(c.Turns) != 2 || c.Turns[1].User != "How long until it is reversed?" {
		t.Fatalf("case = %+v", c)
	}
	rec := c.Recording
	if rec.Version != evalset.RecordingVersion || rec.Network != "support" || rec.Fingerprint != spec.Network.Fingerprint() || len(rec.Agents) != 4 || len(rec.Turns) != 2 {
		t.Fatalf("recording = %+v", rec)
	}
	checkRecordedTurn(t, &rec.Turns[0])
	// The expectations are what the turn did.
	e := c.Turns[0].Expect
	if e.Routing != "triage" || e.Status != "completed" || len(*e.Transfers) != 1 || (*e.Transfers)[0].Context["issue"] != "double_charge" {
		t.Errorf("expect = %+v", e)
	}
	if len(e.Tools.Calls) != 1 || e.Tools.Calls[0].Args["order_id"] != "1234" || e.Answer.ROUGE1.Reference != rec.Turns[0].Answer {
		t.Errorf("expected tools %+v, answer %+v", e.Tools, e.Answer)
	}
}

// checkRecordedTurn checks the recording of the double charge's turn.
func checkRecordedTurn(t *testing.T, o *evalset.Outcome) {
	t.Helper()
	if o.FirstAgent != "triage" || o.Status != "completed" || !strings.Contains(o.Answer, "49.90 EUR") || !strings.HasPrefix(o.RunID, "run_") || o.Usage.InputTokens == 0 {
		t.Errorf("turn 1 = %+v", o)
	}
	if len(o.Transfers) != 1 || o.Transfers[0].From != "triage" || o.Transfers[0].To != "billing" || !strings.Contains(string(o.Transfers[0].Context), "double_charge") {
		t.Errorf("transfers = %+v", o.Transfers)
	}
	if len(o.Tools) != 1 || o.Tools[0].Name != "lookup_order" || !strings.Contains(o.Tools[0].Output, `"charges":2`) {
		t.Errorf("tools = %+v", o.Tools)
	}
	if len(o.ModelCalls) != 3 || o.ModelCalls[0].Agent != "triage" || o.ModelCalls[0].Message.Metadata["scripted_rule"] == nil || o.ModelCalls[0].Message.ID != "" {
		t.Errorf("model calls = %+v", o.ModelCalls)
	}
}

// exportSince: every thread updated since a time, oldest first, the
// refund's approval recorded as its turn's decision; another owner sees
// nothing.
func exportSince(t *testing.T, st store.Store, before time.Time, ids []string) {
	res := export(t, st, eval.ExportOptions{Since: before, Network: support(t, supportFile)})
	if len(res.Set.Cases) != 3 || res.Set.Cases[0].ID != "thread-"+ids[0] || res.Set.Cases[2].ID != "thread-"+ids[2] {
		t.Fatalf("cases since %v: %+v", before, res.Set.Cases)
	}
	refund := res.Set.Cases[1]
	if len(refund.Turns[0].Decisions) != 1 || refund.Turns[0].Decisions[0].Type != evalset.DecisionApprove {
		t.Fatalf("refund case = %+v", refund)
	}
	if ro := refund.Recording.Turns[0]; ro.Status != "completed" || len(ro.Tools) != 2 || ro.Tools[1].Name != "issue_refund" || !strings.Contains(ro.Answer, "R-77") {
		t.Errorf("refund turn = %+v", ro)
	}
	if _, err := eval.Export(t.Context(), st, eval.ExportOptions{Owner: "acme", Since: time.Now().Add(time.Hour)}); err == nil {
		t.Error("an export of no thread succeeded")
	}
	if _, err := eval.Export(t.Context(), st, eval.ExportOptions{Owner: "mallory", Threads: ids[:1]}); err == nil {
		t.Error("another owner exported acme's thread")
	}
}

// exportWithoutNetwork: transfers by their default name, no agent
// recorded (none is answered from the recording).
func exportWithoutNetwork(t *testing.T, st store.Store, id string) {
	res := export(t, st, eval.ExportOptions{Threads: []string{id}})
	rec := res.Set.Cases[0].Recording
	if len(rec.Agents) != 0 || len(rec.Turns[0].Transfers) != 1 || rec.Turns[0].Transfers[0].To != "tech" || rec.Turns[0].Tools[0].Name != "check_status_page" {
		t.Errorf("recording without the network = %+v", rec)
	}
}

// exportOtherVersion: with a network of another version the agents are
// not recorded, and the export says so.
func exportOtherVersion(t *testing.T, st store.Store, id string) {
	changed := support(t, variant(t, "You fix app problems.", "You fix app problems, politely."))
	res := export(t, st, eval.ExportOptions{Threads: []string{id}, Network: changed})
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "not recorded") || len(res.Set.Cases[0].Recording.Agents) != 0 {
		t.Errorf("export with another version: %+v, %v", res.Set.Cases[0].Recording.Agents, res.Warnings)
	}
}

// exportPipeline: a sequential pipeline's transfers are the policy's, in no
// message; the export has them from the run's trail.
func exportPipeline(t *testing.T, st store.Store) {
	const pipeline = "../examples/pipeline/network.yaml"
	ids := recordOn(t, st, pipeline, conversation{"How did EV sales develop in 2025?"})
	res := export(t, st, eval.ExportOptions{Threads: ids, Network: support(t, pipeline)})
	o := res.Set.Cases[0].Recording.Turns[0]
	var hops []string
	for _, tr := range o.Transfers {
		hops = append(hops, tr.From+"→"+tr.To)
	}
	if got := strings.Join(hops, ", "); got != "research→analysis, analysis→report" || o.FirstAgent != "research" {
		t.Errorf("transfers %s, first agent %s", got, o.FirstAgent)
	}
}

// exportPlaceholder: a background run's placeholder message, which repeats
// its answer, is no model call of the recording.
func exportPlaceholder(t *testing.T, st store.Store) {
	ctx := store.ContextWithOwner(t.Context(), "acme")
	placeholder := message.Assistant("", "The report is ready.")
	placeholder.Metadata = map[string]any{continuation.MetaContinuationID: "run_x-c1", continuation.MetaContinuation: map[string]any{"status": "completed"}}
	th, err := st.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "acme", Network: "research", Messages: []store.NewMessage{
		{Message: message.User("How did EV sales develop?")},
		{Message: message.Assistant("analyst", "The report is ready.")},
		{Message: placeholder},
	}})
	if err != nil {
		t.Fatal(err)
	}
	o := export(t, st, eval.ExportOptions{Threads: []string{th.ID}}).Set.Cases[0].Recording.Turns[0]
	if len(o.ModelCalls) != 1 || o.ModelCalls[0].Agent != "analyst" || o.Answer != "The report is ready." {
		t.Errorf("recorded turn = %+v", o)
	}
}

// exportFork: a fork that shares its source's first turn (the source's
// rows, their run ids) and asks again exports both turns, the shared one
// without the source's run: that run is not the fork's.
func exportFork(t *testing.T, st store.Store, id string) {
	msgs, err := st.ListMessages(t.Context(), &store.ListMessagesParams{OwnerID: "acme", ThreadID: id})
	if err != nil {
		t.Fatal(err)
	}
	second := 1
	for msgs[second].Role != message.RoleUser {
		second++
	}
	fork, err := st.CreateThread(t.Context(), &store.CreateThreadParams{OwnerID: "acme", ParentID: id, Network: "support",
		ForkOf: id, ForkSeq: msgs[second-1].Seq, Messages: []store.NewMessage{{Message: message.User("Can it be reversed today?")}}})
	if err != nil {
		t.Fatal(err)
	}
	c := export(t, st, eval.ExportOptions{Threads: []string{fork.ID}}).Set.Cases[0]
	if len(c.Turns) != 2 || c.Turns[0].User != msgs[0].Text() || c.Turns[1].User != "Can it be reversed today?" {
		t.Fatalf("the fork's case = %+v", c)
	}
	if o := c.Recording.Turns[0]; o.RunID != "" || o.Status != "completed" || len(o.Tools) != 1 {
		t.Errorf("the fork's shared turn = %+v", o)
	}
}
