package transfer_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/batonhq/baton/transfer"
)

type orderContext struct {
	OrderID string  `json:"order_id" jsonschema:"pattern=^[0-9]+$"`
	Reason  string  `json:"reason"`
	Amount  float64 `json:"amount,omitempty"`
}

func TestContextFromGoType(t *testing.T) {
	t.Parallel()
	tr := &transfer.Transfer{To: "billing", ContextSchema: transfer.ContextSchemaFor[orderContext]()}
	if err := tr.Compile(); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.BuildContext("triage", json.RawMessage(`{"order_id":"x1","reason":"r"}`)); err == nil || !strings.Contains(err.Error(), "/order_id") {
		t.Fatalf("pattern not enforced: %v", err)
	}
	if _, err := tr.BuildContext("triage", json.RawMessage(`{"reason":"r"}`)); err == nil || !strings.Contains(err.Error(), "order_id") {
		t.Fatalf("required field not enforced: %v", err)
	}
	tc, err := tr.BuildContext("triage", json.RawMessage(`{"order_id":"12","reason":"double charge","amount":9.5}`))
	if err != nil {
		t.Fatal(err)
	}
	if tc.From != "triage" || tc.To != "billing" || tc.Type != transfer.TypeTransfer || tc.Reason != "double charge" || tc.Tool != "transfer_to_billing" {
		t.Errorf("context = %+v", tc)
	}
	got, err := transfer.Decode[orderContext](tc)
	if err != nil || got.OrderID != "12" || got.Amount != 9.5 {
		t.Errorf("Decode = %+v, %v", got, err)
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("é", 400) // multi-byte: the preview must not cut a rune
	tc := &transfer.Context{ID: "h1", From: "triage", Type: transfer.TypeTransfer, Reason: "needs\nbilling",
		Data: json.RawMessage(`{"reason":"needs billing","order_id":"12","log":"` + big + `"}`)}
	out := tc.Render()
	for _, want := range []string{`<transfer_context from="triage" type="transfer">`, "reason: needs billing", `order_id: "12"`, "ref transfer:h1/log", "</transfer_context>"} {
		if !strings.Contains(out, want) {
			t.Errorf("render lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, big) || strings.Count(out, "reason:") != 1 {
		t.Errorf("render:\n%s", out)
	}
	if !strings.Contains(out, "…") || strings.Contains(out, "\ufffd") {
		t.Error("preview cut badly")
	}
	v, ok := tc.Lookup("transfer:h1/log")
	if !ok || string(v) != `"`+big+`"` {
		t.Error("Lookup of the reference failed")
	}
	if _, ok := tc.Lookup("transfer:other/log"); ok {
		t.Error("Lookup accepted another transfer's reference")
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	tr := &transfer.Transfer{To: "x"}
	if tr.Tool() != "transfer_to_x" || tr.Policy() != transfer.HistoryFull || string(tr.Parameters()) != string(transfer.DefaultContextSchema) {
		t.Errorf("defaults: %s %s", tr.Tool(), tr.Policy())
	}
	if err := (&transfer.Transfer{To: "x", History: "some"}).Compile(); err == nil {
		t.Error("unknown history policy accepted")
	}
	tc, err := tr.BuildContext("a", nil)
	if err != nil || tc.Data != nil {
		t.Errorf("empty args: %+v %v", tc, err)
	}
}
