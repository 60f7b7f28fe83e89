package server

import (
	"encoding/json"
	"testing"

	"github.com/batonhq/baton/draft"
)

// FuzzDeltaBatch: a delta batch as another process's signal carries it
// (draft.DeltaBatch's JSON) is read without panicking, and its base is a
// cursor for a replica's batch or a checkpoint's seq, never negative, for a
// worker's (Follow).
func FuzzDeltaBatch(f *testing.F) {
	for _, s := range []string{
		`{"r":"run_1","p":3,"b":"4.0.2","d":[{"a":"5","v":1,"t":"text_delta","j":{"delta":"hi"}}]}`,
		`{"r":"run_1","p":3,"b":"24","f":true,"d":[{"a":"","v":0,"t":"text_delta","j":{}}]}`,
		`{"r":"run_1","p":3,"b":"","f":true,"d":[]}`,
		`{"r":"run_1","p":3,"b":"-1","f":true}`,
		`{"r":"run_1","p":3,"b":"x.y","d":null}`,
		`{}`, `[]`, `null`, ``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		var b draft.DeltaBatch
		if json.Unmarshal([]byte(data), &b) != nil {
			return
		}
		base, err := batchBase(&b)
		if err != nil {
			return
		}
		if b.Follow && (base.Seq < 0 || base.Sub != 0 || base.Ver != 0 || base.Ext != 0) {
			t.Fatalf("a worker's batch base %q read as %+v", b.Base, base)
		}
	})
}
