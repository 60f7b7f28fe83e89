package pgstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
)

// TestThreadFoundByKey checks that the statements that find a thread by
// owner and id — the sequence reservation of every append, alone or with a
// checkpoint or a job run, reading a thread, changing it — find it through
// its key. threads_owner_created_idx (owner_id, created_at, id), the
// listing's index, also matches owner_id = $1 AND id = $2, by reading every
// thread of the owner and comparing ids: on a new database, where the
// estimates cannot tell the indexes apart, the planner chose it and kept
// that plan on the connection, so that every append read a longer range
// as the owner's threads grew (48 of 52 scans of threads here went through
// it before threadKey).
func TestThreadFoundByKey(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := freshSchema(t)
	s := open(t, testdb.URL(t), &store.Options{Schema: schema, MaxConns: 1})
	// The foreign keys to threads go: their checks read threads too, through
	// whichever index the planner picks for them, which is not this test's
	// question (the statements' own reads are).
	conn := admin(t)
	if _, err := conn.Exec(ctx, `SET search_path = `+pgx.Identifier{schema}.Sanitize()+`;
DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT conrelid::regclass AS t, conname FROM pg_constraint
    WHERE contype = 'f' AND confrelid = 'threads'::regclass AND conrelid <> 'threads'::regclass LOOP
    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.t, r.conname);
  END LOOP;
END $$`); err != nil {
		t.Fatal(err)
	}
	const owner = "o"
	if _, err := s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: owner}); err != nil {
		t.Fatal(err)
	}
	msg := func(i int) store.NewMessage {
		return store.NewMessage{Message: message.Message{ID: fmt.Sprintf("m%d", i), Role: message.RoleUser,
			Parts: []message.Part{{Type: message.PartText, Text: "hi"}}}}
	}
	var threads []string
	for i := range 3 {
		th, err := s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: owner, Network: "n", Messages: []store.NewMessage{msg(i)}})
		if err != nil {
			t.Fatal(err)
		}
		threads = append(threads, th.ID)
	}
	// Past the five executions after which a connection's statement may
	// keep a generic plan (one connection: every statement runs on it).
	n := 3
	for i := range 12 {
		th := threads[i%len(threads)]
		n++
		if _, err := s.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: owner, ThreadID: th, Messages: []store.NewMessage{msg(n)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: th}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UpdateThreadMetadata(ctx, &store.UpdateThreadMetadataParams{OwnerID: owner, ThreadID: th, Namespace: "test", Patch: []byte(fmt.Sprintf(`{"k":%d}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	// A backend reports its index scans when it exits at the latest.
	s.Close()
	var scans, byListing int64
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := conn.QueryRow(ctx, `SELECT t.seq_scan + coalesce(t.idx_scan, 0), i.idx_scan
			FROM pg_stat_user_tables t JOIN pg_stat_user_indexes i ON i.relid = t.relid AND i.indexrelname = 'threads_owner_created_idx'
			WHERE t.schemaname = $1 AND t.relname = 'threads'`, schema).Scan(&scans, &byListing); err != nil {
			t.Fatal(err)
		}
		if scans >= 36 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if scans < 36 || byListing != 0 {
		t.Fatalf("scans of threads: %d, of them %d through threads_owner_created_idx; want at least 36, none through it", scans, byListing)
	}
}
