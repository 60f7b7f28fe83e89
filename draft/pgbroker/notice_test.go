package pgbroker

import (
	"encoding/json"
	"testing"

	"github.com/batonhq/baton/draft"
)

// FuzzDecodeNotice: decodeNotice decodes a payload as encoding/json does:
// the same notice, or an error when encoding/json gives one.
func FuzzDecodeNotice(f *testing.F) {
	for _, v := range []any{
		draft.Event{OwnerID: "acme", ThreadID: "thr_1", MessageID: "msg_1"},
		draft.Signal{Kind: "thread", OwnerID: "acme", Key: "thr_1", Data: "run_1"},
		draft.Signal{Kind: "thread.want"},
	} {
		b, err := json.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	for _, s := range []string{`{"O":"a","T":"t"}`, `{"o":"a","o":"b"}`, `{"o":"\xff"}`, `{"o":1}`, `{"o":null}`,
		`{"x":1,"m":"m"}`, `null`, ``, `{"k":"thread"} {}`, `[]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		got, err := decodeNotice(payload)
		var want notice
		wantErr := json.Unmarshal([]byte(payload), &want)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("decodeNotice(%q): error %v, encoding/json %v", payload, err, wantErr)
		}
		if err == nil && got != want {
			t.Fatalf("decodeNotice(%q) = %+v, encoding/json %+v", payload, got, want)
		}
	})
}
