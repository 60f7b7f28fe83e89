package sqlitestore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlitestore"
	"github.com/batonhq/baton/store/storetest"
)

func openFile(t *testing.T, path string, opts *store.Options) *sqlitestore.Store {
	t.Helper()
	return storetest.Opened(sqlitestore.Open(t.Context(), path, opts))(t)
}

func corrupt(ctx context.Context, s store.Store, id string, b []byte) error {
	_, err := s.(*sqlitestore.Store).DB().ExecContext(ctx, `UPDATE checkpoints SET state = $1 WHERE id = $2`, b, id)
	return err
}

// behind runs SQL behind the store's back.
var behind = storetest.SQL{
	Exec: func(ctx context.Context, s store.Store, query string, args ...any) error {
		_, err := s.(*sqlitestore.Store).DB().ExecContext(ctx, query, args...)
		return err
	},
	Int: func(ctx context.Context, s store.Store, query string, args ...any) (int64, error) {
		var n int64
		err := s.(*sqlitestore.Store).DB().QueryRowContext(ctx, query, args...).Scan(&n)
		return n, err
	},
}

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		return openFile(t, filepath.Join(t.TempDir(), "baton.db"), nil)
	}, storetest.WithCorruptCheckpoint(corrupt), storetest.WithSQL(behind))
}

func TestStoreMemory(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		return openFile(t, ":memory:", nil)
	}, storetest.WithCorruptCheckpoint(corrupt), storetest.WithSQL(behind))
}

// TestMigrateConcurrent opens one fresh database from two stores at once
// (as two processes would) and migrates it from both again.
func TestMigrateConcurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "baton.db")
	storetest.MigrateConcurrent(t, 2, sqlitestore.LatestVersion(), func() (*sqlitestore.Store, error) {
		return sqlitestore.Open(t.Context(), path, nil)
	})
}

func TestMigrateDownUp(t *testing.T) {
	t.Parallel()
	s := openFile(t, filepath.Join(t.TempDir(), "baton.db"), nil)
	storetest.MigrateDownUp(t, s, sqlitestore.LatestVersion())
	var n int
	if err := s.DB().QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 16 { // fifteen tables and the version table
		t.Fatalf("%d tables after migrating down and up", n)
	}
}

func TestNoMigrate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "baton.db")
	storetest.NoMigrate(t, 2, sqlitestore.LatestVersion(), func(noMigrate bool) (*sqlitestore.Store, error) {
		return sqlitestore.Open(t.Context(), path, &store.Options{NoMigrate: noMigrate})
	})
}

func TestOpenUnavailable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A folder that is a file, and one that does not exist: refused as
	// invalid paths, and no folder is created.
	_, err := sqlitestore.Open(t.Context(), filepath.Join(file, "baton.db"), nil)
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "is not a folder") {
		t.Fatalf("Open under a file: %v, want ErrInvalid", err)
	}
	missing := filepath.Join(dir, "no", "such")
	_, err = sqlitestore.Open(t.Context(), filepath.Join(missing, "baton.db"), nil)
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "the folder "+missing+" does not exist") {
		t.Fatalf("Open in a missing folder: %v, want ErrInvalid naming it", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a folder was created: %v", err)
	}
	// A path that is a directory.
	_, err = sqlitestore.Open(t.Context(), dir, nil)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Open of a directory: %v, want ErrUnavailable", err)
	}
	_, err = sqlitestore.Open(t.Context(), "", nil)
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Open(\"\"): %v, want ErrInvalid", err)
	}
}

// TestSQLTx writes a row of another table through the *sql.Tx of a store
// transaction, as River's InsertTx does: it commits and rolls back with the
// store's rows.
func TestSQLTx(t *testing.T) {
	t.Parallel()
	s := openFile(t, filepath.Join(t.TempDir(), "baton.db"), nil)
	ctx := t.Context()
	if _, err := s.DB().ExecContext(ctx, `CREATE TABLE jobs (thread_id TEXT)`); err != nil {
		t.Fatal(err)
	}
	if _, ok := sqlitestore.SQLTx(nil); ok {
		t.Fatal("SQLTx(nil) reported ok")
	}
	storetest.DriverTx(t, s, func(ctx context.Context, tx store.Tx, thread string) error {
		if _, err := tx.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: "o", ThreadID: thread,
			Messages: []store.NewMessage{{Message: message.User("hi")}}}); err != nil {
			return err
		}
		sqlTx, ok := sqlitestore.SQLTx(tx)
		if !ok {
			t.Fatal("SQLTx: not ok")
		}
		_, err := sqlTx.ExecContext(ctx, `INSERT INTO jobs (thread_id) VALUES ($1)`, thread)
		return err
	}, func(ctx context.Context, thread string) (n int, err error) {
		err = s.DB().QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE thread_id = $1`, thread).Scan(&n)
		return n, err
	})
}

// TestTwoStoresOneFile writes from two stores on one file at once, as two
// processes sharing the embedded database would: busy_timeout and BEGIN
// IMMEDIATE make them wait for each other instead of failing.
func TestTwoStoresOneFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "baton.db")
	a, b := openFile(t, path, nil), openFile(t, path, nil)
	ctx := t.Context()
	if _, err := a.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: "o"}); err != nil {
		t.Fatal(err)
	}
	th, err := a.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "o"})
	if err != nil {
		t.Fatal(err)
	}
	const each = 25
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []*sqlitestore.Store{a, b} {
		wg.Go(func() {
			for range each {
				if _, err := s.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: "o", ThreadID: th.ID,
					Messages: []store.NewMessage{{Message: message.User("x")}}}); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	msgs, err := b.ListMessages(ctx, &store.ListMessagesParams{OwnerID: "o", ThreadID: th.ID})
	if err != nil || len(msgs) != 2*each {
		t.Fatalf("ListMessages: %d, %v", len(msgs), err)
	}
}

// TestWALAndForeignKeys checks the write connection's settings.
func TestWALAndForeignKeys(t *testing.T) {
	t.Parallel()
	s := openFile(t, filepath.Join(t.TempDir(), "baton.db"), nil)
	var mode string
	var fk, busy int
	db := s.DB()
	ctx := t.Context()
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v", mode, err)
	}
	if err := db.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Fatalf("foreign_keys = %d, %v", fk, err)
	}
	if err := db.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil || busy != 10000 {
		t.Fatalf("busy_timeout = %d, %v", busy, err)
	}
	// The group commit's savepoints journal in memory (2: MEMORY).
	var temp int
	if err := db.QueryRowContext(ctx, `PRAGMA temp_store`).Scan(&temp); err != nil || temp != 2 {
		t.Fatalf("temp_store = %d, %v", temp, err)
	}
	if st := db.Stats(); st.MaxOpenConnections != 1 {
		t.Fatalf("write pool has %d connections, want 1", st.MaxOpenConnections)
	}
}

// TestBusyUnavailable holds the write lock from one store while another,
// with a short busy timeout, tries to write: ErrUnavailable, and nothing
// written; once the lock is released the write goes through.
func TestBusyUnavailable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "baton.db")
	holder := openFile(t, path, nil)
	impatient := openFile(t, path, &store.Options{BusyTimeout: 50 * time.Millisecond})
	ctx := t.Context()
	if _, err := holder.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: "o"}); err != nil {
		t.Fatal(err)
	}
	locked, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- holder.Tx(ctx, func(tx store.Tx) error {
			if _, err := tx.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "o"}); err != nil {
				return err
			}
			close(locked)
			<-release
			return nil
		})
	}()
	<-locked
	_, err := impatient.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "o", ID: "t-busy"})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("write while another process holds the lock: %v, want ErrUnavailable", err)
	}
	// Reads are not blocked by the writer (WAL).
	if _, err := impatient.GetOwner(ctx, &store.GetOwnerParams{ID: "o"}); err != nil {
		t.Errorf("read while locked: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := impatient.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "o", ID: "t-busy"}); err != nil {
		t.Fatalf("after the lock is released: %v", err)
	}
}

func TestOpenOddPath(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "we?ird #dir %20 ü")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	s := openFile(t, filepath.Join(dir, "b.db"), nil)
	if _, err := s.EnsureOwner(t.Context(), &store.EnsureOwnerParams{ID: "o"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.db")); err != nil {
		t.Fatalf("database not at the path given: %v", err)
	}
}

func TestRetention(t *testing.T) {
	t.Parallel()
	storetest.Retention(t, openFile(t, filepath.Join(t.TempDir(), "baton.db"), nil))
}
