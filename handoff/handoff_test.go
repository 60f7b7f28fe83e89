package handoff_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/batonhq/baton/handoff"
)

type orderContext struct {
	OrderID string  `json:"order_id" jsonschema:"pattern=^[0-9]+$"`
	Reason  string  `json:"reason"`
	Amount  float64 `json:"amount,omitempty"`
}

func TestContextFromGoType(t *testing.T) {
	t.Parallel()
	h := &handoff.Handoff{To: "billing", ContextSchema: handoff.ContextSchemaFor[orderContext]()}
	if err := h.Compile(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.BuildContext("triage", json.RawMessage(`{"order_id":"x1","reason":"r"}`)); err == nil || !strings.Contains(err.Error(), "/order_id") {
		t.Fatalf("pattern not enforced: %v", err)
	}
	if _, err := h.BuildContext("triage", json.RawMessage(`{"reason":"r"}`)); err == nil || !strings.Contains(err.Error(), "order_id") {
		t.Fatalf("required field not enforced: %v", err)
	}
	hc, err := h.BuildContext("triage", json.RawMessage(`{"order_id":"12","reason":"double charge","amount":9.5}`))
	if err != nil {
		t.Fatal(err)
	}
	if hc.From != "triage" || hc.To != "billing" || hc.Type != handoff.TypeTransfer || hc.Reason != "double charge" || hc.Tool != "transfer_to_billing" {
		t.Errorf("context = %+v", hc)
	}
	got, err := handoff.Decode[orderContext](hc)
	if err != nil || got.OrderID != "12" || got.Amount != 9.5 {
		t.Errorf("Decode = %+v, %v", got, err)
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("é", 400) // multi-byte: the preview must not cut a rune
	hc := &handoff.Context{ID: "h1", From: "triage", Type: handoff.TypeTransfer, Reason: "needs\nbilling",
		Data: json.RawMessage(`{"reason":"needs billing","order_id":"12","log":"` + big + `"}`)}
	out := hc.Render()
	for _, want := range []string{`<handoff_context from="triage" type="transfer">`, "reason: needs billing", `order_id: "12"`, "ref handoff:h1/log", "</handoff_context>"} {
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
	v, ok := hc.Lookup("handoff:h1/log")
	if !ok || string(v) != `"`+big+`"` {
		t.Error("Lookup of the reference failed")
	}
	if _, ok := hc.Lookup("handoff:other/log"); ok {
		t.Error("Lookup accepted another handoff's reference")
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	h := &handoff.Handoff{To: "x"}
	if h.Tool() != "transfer_to_x" || h.Policy() != handoff.HistoryFull || string(h.Parameters()) != string(handoff.DefaultContextSchema) {
		t.Errorf("defaults: %s %s", h.Tool(), h.Policy())
	}
	if err := (&handoff.Handoff{To: "x", History: "some"}).Compile(); err == nil {
		t.Error("unknown history policy accepted")
	}
	hc, err := h.BuildContext("a", nil)
	if err != nil || hc.Data != nil {
		t.Errorf("empty args: %+v %v", hc, err)
	}
}
