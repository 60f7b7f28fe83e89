package runstate

import (
	"bytes"
	"os"
	"reflect"
	"testing"
)

// storedForms encodes benchStoredState(10) in the stored form of each
// version, by version.
func storedForms(tb testing.TB) map[int][]byte {
	tb.Helper()
	s, r := benchStoredState(10)
	out := map[int][]byte{}
	for _, v := range []int{StoredVersion, storedV3} {
		b, err := EncodeStoredVersion(s, r, v)
		if err != nil {
			tb.Fatal(err)
		}
		out[v] = b
	}
	return out
}

// FuzzDecodeStoredFast: whatever decodeStoredFast decodes, DecodeStored's
// own path (decodeStoredSlow) decodes the same.
func FuzzDecodeStoredFast(f *testing.F) {
	for _, b := range storedForms(f) {
		f.Add(b)
	}
	if b, err := os.ReadFile("testdata/state_v3.json"); err == nil {
		f.Add(bytes.TrimSpace(b))
	}
	f.Add([]byte(`{"schema_version":4,"agent":"a","transcript_rows":2,"marks":[{"n":0,"no_finish":true},{"n":1,"finish_reason":"length"}],"final_last":true,"started_at":1764644400000000001,"usage":{"input_tokens":3},"messages":[{"run":[0,2]}]}`))
	f.Add([]byte(`{"schema_version":4,"agent":"a","messages":[],"schema_version":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := decodeStoredFast(b)
		if !ok {
			return
		}
		slow, err := decodeStoredSlow(b)
		if err != nil {
			t.Fatalf("decodeStoredFast decoded what DecodeStored's path refuses: %v", err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("decodeStoredFast = %+v, DecodeStored's path = %+v", fast.v, slow.v)
		}
	})
}

// TestDecodeStoredFast: a stored form of either version takes the fast
// path; Encode's whole form and a duplicated schema_version do not.
func TestDecodeStoredFast(t *testing.T) {
	for v, b := range storedForms(t) {
		if _, ok := decodeStoredFast(b); !ok {
			t.Errorf("version %d: not decoded by decodeStoredFast", v)
		}
	}
	whole, err := Encode(benchState())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{whole, []byte(`{"schema_version":4,"agent":"a","messages":[],"schema_version":2}`)} {
		if _, ok := decodeStoredFast(b); ok {
			t.Errorf("%.40s: decoded by decodeStoredFast", b)
		}
	}
}
