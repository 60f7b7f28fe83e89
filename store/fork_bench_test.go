package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/sqlitestore"
)

// BenchmarkFork measures what a fork of a long thread writes: a source of
// forkSource messages (user questions and answers of about 100 bytes) forked
// at its last message, edited. Copy creates the fork as Fork did before it
// shared history (every message copied, the last edited); Shared as it does
// now (ForkOf and ForkSeq, one row of its own). Reported per fork: message
// rows and their bytes (parts, metadata, usage) written, and on PostgreSQL
// the WAL bytes.
//
//	go test -run '^$' -bench Fork -benchtime 50x ./store/
func BenchmarkFork(b *testing.B) {
	const forkSource = 200
	for _, be := range benchBackends(b) {
		ctx := context.Background()
		owner := "bench-fork-" + randHex()
		if _, err := be.store.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: owner}); err != nil {
			b.Fatal(err)
		}
		var in []store.NewMessage
		for i := range forkSource / 2 {
			in = append(in, store.NewMessage{Message: message.User(fmt.Sprintf("Question %d about invoice INV-2026-%04d: why was I charged twice this month?", i, i))},
				store.NewMessage{Message: message.Assistant("billing", fmt.Sprintf("Answer %d: the second charge is a pre-authorisation released within 3 days.", i))})
		}
		src, err := be.store.CreateThread(ctx, &store.CreateThreadParams{OwnerID: owner, Name: "source", Messages: in})
		if err != nil {
			b.Fatal(err)
		}
		msgs, err := be.store.ListMessages(ctx, &store.ListMessagesParams{OwnerID: owner, ThreadID: src.ID})
		if err != nil {
			b.Fatal(err)
		}
		edited := message.Assistant("billing", "Answer edited: the charge is refunded.")
		for _, shared := range []bool{false, true} {
			name := be.name + "/Copy"
			if shared {
				name = be.name + "/Shared"
			}
			b.Run(name, func(b *testing.B) {
				rows0, bytes0, wal0 := forkCounts(b, be.store, owner)
				for b.Loop() {
					p := &store.CreateThreadParams{OwnerID: owner, ParentID: src.ID, Name: "fork"}
					if shared {
						p.ForkOf, p.ForkSeq = src.ID, msgs[len(msgs)-2].Seq
					} else {
						for _, m := range msgs[:len(msgs)-1] {
							c := m.Message
							c.ID = ""
							p.Messages = append(p.Messages, store.NewMessage{Message: c})
						}
					}
					p.Messages = append(p.Messages, store.NewMessage{Message: edited})
					if _, err := be.store.CreateThread(ctx, p); err != nil {
						b.Fatal(err)
					}
				}
				rows, bytes, wal := forkCounts(b, be.store, owner)
				n := float64(b.N)
				b.ReportMetric(float64(rows-rows0)/n, "rows/fork")
				b.ReportMetric(float64(bytes-bytes0)/n, "msgbytes/fork")
				if wal0 >= 0 {
					b.ReportMetric(float64(wal-wal0)/n, "walbytes/fork")
				}
			})
		}
	}
}

// forkCounts returns the message rows of owner, their bytes and, on
// PostgreSQL, the WAL position (-1 on SQLite).
func forkCounts(b *testing.B, s store.Store, owner string) (rows, bytes, wal int64) {
	b.Helper()
	ctx := context.Background()
	const q = `SELECT count(*), COALESCE(sum(length(parts) + length(metadata) + COALESCE(length(usage), 0)), 0) FROM messages WHERE owner_id = $1`
	switch s := s.(type) {
	case *sqlitestore.Store:
		if err := s.DB().QueryRowContext(ctx, q, owner).Scan(&rows, &bytes); err != nil {
			b.Fatal(err)
		}
		return rows, bytes, -1
	case *pgstore.Store:
		const pq = `SELECT count(*), COALESCE(sum(length(parts::text) + length(metadata::text) + COALESCE(length(usage::text), 0)), 0),
			pg_current_wal_lsn() - '0/0'::pg_lsn FROM messages WHERE owner_id = $1`
		var w float64
		if err := s.Pool().QueryRow(ctx, pq, owner).Scan(&rows, &bytes, &w); err != nil {
			b.Fatal(err)
		}
		return rows, bytes, int64(w)
	}
	b.Fatalf("unknown store %T", s)
	return 0, 0, 0
}
