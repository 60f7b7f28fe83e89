package jsonfast

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendRaw holds AppendRaw and AppendRawMap to json.Marshal: the
// same bytes for valid JSON (space between tokens, <, >, &, U+2028,
// U+2029, escapes, invalid UTF-8 in strings), false, writing nothing, for
// what json.Marshal refuses.
func FuzzAppendRaw(f *testing.F) {
	for _, s := range []string{`{"a":1}`, ` { "a<b>" : [ 1 , "\u2028 \"&\\" , null ] } `, "\"\xe2\x80\xa8\xe2\x80\xa9\xff\"",
		`{"a":`, ``, `1 2`, "\t\r\n\"x\"\n", `"\\"`, "[\"\\\"<\"]"} {
		f.Add([]byte(s), "k<")
	}
	f.Fuzz(func(t *testing.T, raw []byte, key string) {
		want, wantErr := json.Marshal(json.RawMessage(raw))
		got, ok := AppendRaw([]byte("x"), raw)
		if ok != (wantErr == nil) || (ok && !bytes.Equal(got[1:], want)) || (!ok && string(got) != "x") {
			t.Fatalf("AppendRaw(%q) = %q, %v; json.Marshal: %q, %v", raw, got, ok, want, wantErr)
		}
		m := map[string]json.RawMessage{key: raw, "b": json.RawMessage(`[1]`), "c": nil}
		want, wantErr = json.Marshal(m)
		got, ok = AppendRawMap([]byte("x"), m)
		if ok != (wantErr == nil) || (ok && !bytes.Equal(got[1:], want)) || (!ok && string(got) != "x") {
			t.Fatalf("AppendRawMap(%q) = %q, %v; json.Marshal: %q, %v", m, got, ok, want, wantErr)
		}
	})
}
