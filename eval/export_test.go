package eval_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/eval"
	"github.com/batonhq/baton/eval/evalset"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/store"
)

// TestExport turns stored threads into cases, on SQLite and PostgreSQL.
func TestExport(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		st := open(t)
		before := time.Now().Add(-time.Second)
		ids := record(t, st, conversations...)
		spec := support(t, supportFile)
		res, err := eval.Export(t.Context(), st, eval.ExportOptions{Owner: "acme", Threads: ids[:1], Network: spec})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Warnings) != 0 || len(res.Set.Cases) != 1 {
			t.Fatalf("export = %+v", res)
		}
		c := res.Set.Cases[0]
		if c.ID != "thread-"+ids[0] || len(c.Turns) != 2 || c.Turns[1].User != "How long until it is reversed?" {
			t.Fatalf("case = %+v", c)
		}
		rec := c.Recording
		if rec.Version != evalset.RecordingVersion || rec.Network != "support" || rec.Fingerprint != spec.Network.Fingerprint() || len(rec.Agents) != 4 || len(rec.Turns) != 2 {
			t.Fatalf("recording = %+v", rec)
		}
		o := rec.Turns[0]
		if o.FirstAgent != "triage" || o.Status != "completed" || !strings.Contains(o.Answer, "49.90 EUR") || !strings.HasPrefix(o.RunID, "run_") {
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
		if o.Usage.InputTokens == 0 {
			t.Error("no usage recorded")
		}
		// The expectations are what the turn did.
		e := c.Turns[0].Expect
		if e.Routing != "triage" || e.Status != "completed" || len(*e.Transfers) != 1 || (*e.Transfers)[0].Context["issue"] != "double_charge" ||
			len(e.Tools.Calls) != 1 || e.Tools.Calls[0].Args["order_id"] != "1234" || e.Answer.ROUGE1.Reference != o.Answer {
			t.Errorf("expect = %+v", e)
		}

		// Since a time: every thread of the network, the refund's approval
		// recorded as the turn's decision.
		res, err = eval.Export(t.Context(), st, eval.ExportOptions{Owner: "acme", Since: before, Network: spec})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Set.Cases) != 3 {
			t.Fatalf("%d cases since %v", len(res.Set.Cases), before)
		}
		refund := caseOf(res.Set, "thread-"+ids[1])
		if refund == nil || len(refund.Turns[0].Decisions) != 1 || refund.Turns[0].Decisions[0].Type != evalset.DecisionApprove {
			t.Fatalf("refund case = %+v", refund)
		}
		if ro := refund.Recording.Turns[0]; ro.Status != "completed" || len(ro.Tools) != 2 || ro.Tools[1].Name != "issue_refund" || !strings.Contains(ro.Answer, "R-77") {
			t.Errorf("refund turn = %+v", ro)
		}
		if _, err := eval.Export(t.Context(), st, eval.ExportOptions{Owner: "acme", Since: time.Now().Add(time.Hour)}); err == nil {
			t.Error("an export of no thread succeeded")
		}
		// Another owner sees nothing of acme's.
		if _, err := eval.Export(t.Context(), st, eval.ExportOptions{Owner: "mallory", Threads: ids[:1]}); err == nil {
			t.Error("another owner exported acme's thread")
		}

		// Without the network: transfers by their default name, no agent
		// recorded (they are never answered from the recording).
		res, err = eval.Export(t.Context(), st, eval.ExportOptions{Owner: "acme", Threads: ids[2:]})
		if err != nil {
			t.Fatal(err)
		}
		tech := res.Set.Cases[0].Recording
		if len(tech.Agents) != 0 || len(tech.Turns[0].Transfers) != 1 || tech.Turns[0].Transfers[0].To != "tech" || tech.Turns[0].Tools[0].Name != "check_status_page" {
			t.Errorf("recording without the network = %+v", tech)
		}

		// A network of another version: the agents are not recorded, and
		// the export says so.
		changed := support(t, variant(t, "You fix app problems.", "You fix app problems, politely."))
		res, err = eval.Export(t.Context(), st, eval.ExportOptions{Owner: "acme", Threads: ids[2:], Network: changed})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "not recorded") || len(res.Set.Cases[0].Recording.Agents) != 0 {
			t.Errorf("export with another version: %+v, %v", res.Set.Cases[0].Recording.Agents, res.Warnings)
		}

		// What Export writes, Parse reads.
		var b bytes.Buffer
		if err := evalset.Write(&b, res.Set, evalset.FormatYAML, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := evalset.Parse(b.Bytes(), "export.yaml"); err != nil {
			t.Fatalf("exported set does not parse: %v\n%s", err, b.String())
		}
	})
}

func caseOf(s *evalset.Set, id string) *evalset.Case {
	for i := range s.Cases {
		if s.Cases[i].ID == id {
			return &s.Cases[i]
		}
	}
	return nil
}
