package sqlcore

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/batonhq/baton/internal/jsonfast"
	"github.com/batonhq/baton/message"
)

// FuzzAppendMetadata holds jsonfast.AppendObject, which encodeMetadata
// writes with, to json.Marshal: the same bytes for the objects it writes (strings of any bytes, keys in any order,
// objects inside objects, numbers), and false, writing nothing, for the values it
// leaves to json.Marshal.
func FuzzAppendMetadata(f *testing.F) {
	for _, s := range [][4]string{
		{"run_id", "run_1", "status", "queued"},
		{"a<b>&c", "\"quoted\" \\ back", "\b\f\n\r\t\x00\x1f\x7f", "\u2028\u2029 é 日本"},
		{"\xff\xfe", "bad \xc3 utf8 \xed\xa0\x80", "", "z"},
		{"k", "k", "k", "k"},
	} {
		for _, x := range []float64{0, 12.5, -3, 1e-7, 1.5e-6, 1e21, 9.99e20, 123456789012345678, -0.000001} {
			f.Add(s[0], s[1], s[2], s[3], true, x)
		}
	}
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string, b bool, x float64) {
		for _, m := range []map[string]any{
			{k1: v1},
			{k1: v1, k2: v2, "b": b, "n": nil},
			{k1: map[string]any{k2: v2, v1: b, "deep": map[string]any{v2: map[string]string{k1: v1}}}, k2: v1},
			{"continuation_id": v1, "continuation": map[string]any{"run_id": k1, "job_run_id": k2, "status": v2}},
			{k1: map[string]string{k2: v2, v1: k1}, k2: map[string]any(nil), v1: map[string]string(nil)},
			{k1: x, k2: int(x), v1: map[string]any{"i64": int64(x), "f": -x, "step": 1}},
		} {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				continue
			}
			want, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := jsonfast.AppendObject([]byte("x"), m, 0)
			if !ok || !bytes.Equal(got[1:], want) {
				t.Fatalf("jsonfast.AppendObject(%#v) = %q, %v; json.Marshal: %q", m, got, ok, want)
			}
			enc, err := encodeMetadata(m)
			if err != nil || enc != string(want) {
				t.Fatalf("encodeMetadata(%#v) = %q, %v; json.Marshal: %q", m, enc, err, want)
			}
		}
		// Values it does not write: left to json.Marshal, dst as it was.
		for i, m := range []map[string]any{
			{k1: v1, k2: float32(1.5)},
			{k1: v1, k2: math.NaN()},
			{k1: map[string]any{k2: math.Inf(-1)}},
			{k1: map[string]any{k2: []string{v2}}},
			{k1: json.RawMessage(`{}`)},
			{k1: map[string]any{"a": map[string]any{"b": map[string]any{"c": map[string]any{"d": map[string]any{"e": map[string]any{}}}}}}},
		} {
			if got, ok := jsonfast.AppendObject([]byte("x"), m, 0); ok || string(got) != "x" {
				t.Fatalf("jsonfast.AppendObject(%#v) = %q, %v; want it left to json.Marshal", m, got, ok)
			}
			if i == 1 || i == 2 {
				continue // json.Marshal refuses them too
			}
			want, _ := json.Marshal(m)
			if enc, err := encodeMetadata(m); err != nil || enc != string(want) {
				t.Fatalf("encodeMetadata(%#v) = %q, %v; json.Marshal: %q", m, enc, err, want)
			}
		}
	})
}

// FuzzAppendUsage holds jsonfast.AppendUsage, which encodeUsage writes
// with, to json.Marshal, every field set or not, numbers of any sign and
// size.
func FuzzAppendUsage(f *testing.F) {
	f.Add(int64(120), int64(18), int64(0), int64(0), int64(0))
	f.Add(int64(0), int64(0), int64(0), int64(0), int64(0))
	f.Add(int64(-1), int64(math.MaxInt64), int64(math.MinInt64), int64(7), int64(1))
	f.Fuzz(func(t *testing.T, in, out, cached, created, reasoning int64) {
		u := &message.Usage{InputTokens: in, OutputTokens: out, CachedTokens: cached, CacheCreationTokens: created, ReasoningTokens: reasoning}
		want, err := json.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonfast.AppendUsage(nil, u); !bytes.Equal(got, want) {
			t.Fatalf("jsonfast.AppendUsage(%+v) = %s; json.Marshal: %s", *u, got, want)
		}
	})
}

// TestAppendUsageEveryField: jsonfast.AppendUsage writes every field of
// message.Usage, one added later included (it fails until AppendUsage
// knows it).
func TestAppendUsageEveryField(t *testing.T) {
	t.Parallel()
	var u message.Usage
	v := reflect.ValueOf(&u).Elem()
	for i := range v.NumField() {
		v.Field(i).SetInt(int64(i + 1))
	}
	want, err := json.Marshal(&u)
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonfast.AppendUsage(nil, &u); !bytes.Equal(got, want) {
		t.Fatalf("jsonfast.AppendUsage = %s; json.Marshal: %s", got, want)
	}
}
