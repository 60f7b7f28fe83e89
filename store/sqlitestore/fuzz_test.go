package sqlitestore_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlitestore"
)

// FuzzDecodeCheckpoint stores arbitrary bytes as the state of a checkpoint
// row and reads the checkpoint back through the store: the result is a
// state of the row's run and step that re-encodes stably, or a
// *store.CorruptError wrapping a runstate decoding error. Never a panic.
func FuzzDecodeCheckpoint(f *testing.F) {
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, ":memory:", nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	if _, err := s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: "o"}); err != nil {
		f.Fatal(err)
	}
	valid := &runstate.State{RunID: "run", Network: "n", Fingerprint: "fp", Agent: "a", Status: runstate.StatusRunning, Step: 1,
		Pending: []runstate.PendingCall{{Kind: runstate.CallTool}}}
	valid.Pending[0].Call.ID = "c1"
	cp, err := s.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: "o", State: valid})
	if err != nil {
		f.Fatal(err)
	}
	good, _ := runstate.Encode(valid)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"schema_version":2,"run_id":"run","agent":"a","fingerprint":"fp","status":"running","step":1,"messages":null,"transcript":null,"trail":null,"turns":0,"transfers":0,"usage":{},"started_at":"0001-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"schema_version":1,"run_id":"run","agent":"a","fingerprint":"fp","status":"running","step":1,"handoffs":1,"pending":[{"call":{"id":"c1"},"kind":"handoff"}]}`))
	f.Add([]byte(`{"schema_version":2,"run_id":"run","agent":"a","fingerprint":"fp","status":"interrupted","step":1}`))
	f.Add([]byte(`{"schema_version":2,"run_id":"other","agent":"a","fingerprint":"fp","status":"running","step":1}`))
	f.Add([]byte(`{"schema_version":3}`))
	f.Add([]byte(`{"schema_version":2,"run_id":"run","agent":"a","fingerprint":"fp","status":"running","step":1,"pending":[{"call":{"id":"x"},"kind":"teleport"}]}`))
	f.Add([]byte(`{"schema_version":2,"run_id":"run","agent":"a","fingerprint":"fp","status":"running","step":1,"extra":true}`))
	f.Add([]byte(`{"schema_version":2,"run_id":"run","agent":"a","fingerprint":"fp","status":"running","step":1} {}`))
	f.Add([]byte("null"))
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xfe, 0x00})

	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := s.DB().ExecContext(ctx, `UPDATE checkpoints SET state = $1 WHERE id = $2`, b, cp.ID); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: "o", ID: cp.ID})
		// The store decodes as runstate.Decode does, and then checks the
		// state is the row's.
		want, wantErr := runstate.Decode(b)
		rowState := wantErr == nil && want.RunID == "run" && want.Step == 1 && want.Fingerprint == "fp"
		if (err == nil) != rowState {
			t.Fatalf("store: %v; runstate.Decode: %v, %+v", err, wantErr, want)
		}
		if err == nil {
			w, _ := runstate.Encode(want)
			g, _ := runstate.Encode(got.State)
			if !bytes.Equal(w, g) {
				t.Fatalf("store decoded\n%s\nrunstate.Decode decoded\n%s", g, w)
			}
		}
		if err != nil {
			var ce *store.CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, store.ErrCorrupt) ||
				!(errors.Is(err, runstate.ErrCorrupt) || errors.Is(err, runstate.ErrUnknownVersion)) {
				t.Fatalf("error %v (%T) is not a CorruptError wrapping a runstate error", err, err)
			}
			if ce.ID != cp.ID {
				t.Fatalf("CorruptError names %s, want %s", ce.ID, cp.ID)
			}
			return
		}
		st := got.State
		if st == nil || st.RunID != "run" || st.Step != 1 || st.Fingerprint != "fp" {
			t.Fatalf("decoded the state of another row: %+v", st)
		}
		// Decoding normalises; after that, encoding is stable.
		b1, err := runstate.Encode(st)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		st2, err := runstate.Decode(b1)
		if err != nil {
			t.Fatalf("decode of re-encoded state: %v", err)
		}
		b2, err := runstate.Encode(st2)
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", b1, b2)
		}
	})
}
