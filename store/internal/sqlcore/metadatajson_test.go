package sqlcore

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendMetadata holds appendObject to json.Marshal: the same bytes
// for the objects it writes (strings of any bytes, keys in any order,
// objects inside objects), and false, writing nothing, for the values it
// leaves to json.Marshal.
func FuzzAppendMetadata(f *testing.F) {
	for _, s := range [][4]string{
		{"run_id", "run_1", "status", "queued"},
		{"a<b>&c", "\"quoted\" \\ back", "\b\f\n\r\t\x00\x1f\x7f", "\u2028\u2029 é 日本"},
		{"\xff\xfe", "bad \xc3 utf8 \xed\xa0\x80", "", "z"},
		{"k", "k", "k", "k"},
	} {
		f.Add(s[0], s[1], s[2], s[3], true)
	}
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string, b bool) {
		for _, m := range []map[string]any{
			{k1: v1},
			{k1: v1, k2: v2, "b": b, "n": nil},
			{k1: map[string]any{k2: v2, v1: b, "deep": map[string]any{v2: map[string]string{k1: v1}}}, k2: v1},
			{"continuation_id": v1, "continuation": map[string]any{"run_id": k1, "job_run_id": k2, "status": v2}},
			{k1: map[string]string{k2: v2, v1: k1}, k2: map[string]any(nil), v1: map[string]string(nil)},
		} {
			want, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := appendObject([]byte("x"), m, 0)
			if !ok || !bytes.Equal(got[1:], want) {
				t.Fatalf("appendObject(%#v) = %q, %v; json.Marshal: %q", m, got, ok, want)
			}
			enc, err := encodeMetadata(m)
			if err != nil || enc != string(want) {
				t.Fatalf("encodeMetadata(%#v) = %q, %v; json.Marshal: %q", m, enc, err, want)
			}
		}
		// Values it does not write: left to json.Marshal, dst as it was.
		for _, m := range []map[string]any{
			{k1: v1, k2: 1.5},
			{k1: map[string]any{k2: []string{v2}}},
			{k1: json.RawMessage(`{}`)},
			{k1: map[string]any{"a": map[string]any{"b": map[string]any{"c": map[string]any{"d": map[string]any{"e": map[string]any{}}}}}}},
		} {
			if got, ok := appendObject([]byte("x"), m, 0); ok || string(got) != "x" {
				t.Fatalf("appendObject(%#v) = %q, %v; want it left to json.Marshal", m, got, ok)
			}
			want, _ := json.Marshal(m)
			if enc, err := encodeMetadata(m); err != nil || enc != string(want) {
				t.Fatalf("encodeMetadata(%#v) = %q, %v; json.Marshal: %q", m, enc, err, want)
			}
		}
	})
}
