package a2a

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/batonhq/baton/runner"
)

// FuzzA2AMessage feeds arbitrary JSON, decoded as the A2A SDK decodes a
// message/send's message, to parseA2AMessage: it never panics; it refuses
// with an A2A invalid-params or unsupported-content-type error, or reads
// the text parts as the input, at most maxA2AHistory messages of history,
// and decisions of a known type (an edit with its arguments).
func FuzzA2AMessage(f *testing.F) {
	for _, s := range []string{
		`{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"Hi"}]}`,
		`{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"a"},{"kind":"text","text":"b"}]}`,
		`{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"Hi"}]}`,
		`{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"data","data":{"history":[{"role":"user","text":"Hello"},{"role":"assistant","text":"Hi"},{"role":"system","text":"Be brief"}]}},{"kind":"text","text":"go on"}]}`,
		`{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"data","data":{"history":[{"role":"robot","text":"x"}]}}]}`,
		`{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"data","data":{"history":"no"}}]}`,
		`{"kind":"message","messageId":"m","role":"user","taskId":"run_x","parts":[{"kind":"data","data":{"type":"approve"}}]}`,
		`{"kind":"message","messageId":"m","role":"user","taskId":"run_x","parts":[{"kind":"data","data":{"type":"edit","args":{"amount":10}}}]}`,
		`{"kind":"message","messageId":"m","role":"user","taskId":"run_x","parts":[{"kind":"data","data":{"type":"edit"}}]}`,
		`{"kind":"message","messageId":"m","role":"user","taskId":"run_x","parts":[{"kind":"data","data":{"decisions":[{"type":"reject","message":"no","call_id":"c1"},{"type":"approve","call_id":"c2"}]}}]}`,
		`{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"data","data":{"other":1}}]}`,
		`{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"file","file":{"uri":"https://example.com/a.pdf"}}]}`,
		`{"kind":"message","messageId":"m","role":"user","parts":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m a2a.Message
		if json.Unmarshal(b, &m) != nil {
			return
		}
		in, err := parseA2AMessage(&m)
		if err != nil {
			if !errors.Is(err, a2a.ErrInvalidParams) && !errors.Is(err, a2a.ErrUnsupportedContentType) {
				t.Fatalf("error %v is neither invalid params nor an unsupported content type", err)
			}
			return
		}
		var texts []string
		for _, p := range m.Parts {
			if tp, ok := p.(a2a.TextPart); ok {
				texts = append(texts, tp.Text)
			}
		}
		if want := strings.Join(texts, "\n"); in.text != want {
			t.Fatalf("text %q, want the text parts %q", in.text, want)
		}
		if len(in.history) > maxA2AHistory {
			t.Fatalf("%d messages of history", len(in.history))
		}
		for _, d := range in.decisions {
			switch d.Type {
			case runner.DecisionApprove, runner.DecisionReject:
			case runner.DecisionEdit:
				var obj map[string]json.RawMessage
				if json.Unmarshal(d.Args, &obj) != nil || obj == nil {
					t.Fatalf("an edit without object args: %s", d.Args)
				}
			default:
				t.Fatalf("decision type %q", d.Type)
			}
		}
	})
}
