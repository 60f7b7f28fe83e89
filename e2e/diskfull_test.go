package e2e_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/store/sqlitestore"
)

// TestSQLiteDiskFull: `baton serve` on an SQLite file in a small tmpfs
// (mounted by the test: it needs root). Runs complete; then the disk is
// filled to its last byte while a background run's tool call is under
// way. New requests get a clear answer at once — 503 unavailable, "the
// database's disk is full", Retry-After — and the server logs it as an
// error; nothing hangs. Once space is freed (nobody restarts anything)
// new runs complete, the run that was in flight completes too, the
// threads written before are all there, and the file passes SQLite's
// integrity_check.
func TestSQLiteDiskFull(t *testing.T) {
	batonBin(t)
	t.Parallel()
	// CI runs as root on machines that mount: there it must run.
	skip := t.Skipf
	if os.Getenv("CI") == "true" {
		skip = t.Fatalf
	}
	if os.Geteuid() != 0 {
		skip("needs root to mount a small tmpfs (the disk that fills)")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", mnt).CombinedOutput(); err != nil {
		skip("mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	path := filepath.Join(mnt, "baton.db")
	st, err := sqlitestore.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	db := &database{url: "sqlite:" + path, st: st, sql: st.DB()}
	var shipHold atomic.Int64
	fx := newEffects(t, func(tool string) time.Duration {
		if tool == "ship" {
			return time.Duration(shipHold.Load())
		}
		return 0
	})
	c := startCluster(t, db, fx, clusterConfig{serveWorkers: 1, flags: []string{"--lease-ttl", "6s", "--job-timeout", "1m"}})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	// Before: a few runs complete.
	var before []string
	for _, p := range []string{"inline", "background", "inline"} {
		before = append(before, completeRun(ctx, t, c, paths[p][0]))
	}
	msgsBefore := map[string]int{}
	for _, th := range before {
		msgs, _ := db.messages(t, th)
		msgsBefore[th] = len(msgs)
	}

	// A background run in flight when the disk fills.
	shipHold.Store(int64(3 * time.Second))
	calls, stop := fx.watch()
	defer stop()
	inflight, err := c.api.createThread(ctx)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _, _ = c.api.stream(ctx, inflight, paths["background"][0], nil, firstEnd) }()
	if _, ok := nextCall(ctx, calls, time.Minute, func(ev callEvent) bool { return ev.tool == "ship" && !ev.done }); !ok {
		t.Fatal("no ship call within a minute")
	}
	filler := filepath.Join(mnt, "filler")
	fill(t, filler)
	shipHold.Store(0)

	// Full: a clear answer, at once.
	full := 0
	for i := 0; i < 500 && full < 5; i++ {
		start := time.Now()
		code, h, body := (&outage{key: c.api.key}).raw(ctx, http.MethodPost, c.serve.url()+"/v1/threads")
		took := time.Since(start)
		if took > answerBound {
			t.Errorf("POST /v1/threads on a full disk answered after %s, want within %s", took, answerBound)
		}
		switch {
		case code == http.StatusCreated || code == http.StatusOK:
			continue // the WAL had room for this one
		case code == http.StatusServiceUnavailable && strings.Contains(body, "disk is full") && h.Get("Retry-After") != "":
			full++
		default:
			t.Fatalf("POST /v1/threads on a full disk: %d (Retry-After %q) %s, want 503 saying the disk is full", code, h.Get("Retry-After"), body)
		}
	}
	if full == 0 {
		t.Fatal("500 requests on a full disk, none refused: the disk never filled")
	}
	if b, _ := os.ReadFile(c.serve.logPath); !strings.Contains(string(b), "the database's disk is full; free space") {
		t.Error("the server's log does not say the disk is full")
	}

	// Freed: everything works again.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"inline", "background"} {
		completeRun(ctx, t, c, paths[p][0])
	}
	waitCompleted(ctx, t, c, inflight, 1)
	for th, n := range msgsBefore {
		if msgs, _ := db.messages(t, th); len(msgs) != n {
			t.Errorf("thread %s written before the disk filled: %d messages after, %d before", th, len(msgs), n)
		}
	}
	c.stop(t)
	var check string
	if err := db.sql.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check after the disk filled: %q %v, want ok", check, err)
	}
	t.Logf("the disk filled mid run: %d requests refused (503, disk full), then runs completed again once space was freed; integrity_check %s", full, check)
}

// fill writes path until the file system is full.
func fill(t *testing.T, path string) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}

// completeRun runs input on a new thread to its end and waits until the
// run (and its continuation, if any) is completed; it returns the thread.
func completeRun(ctx context.Context, t *testing.T, c *cluster, input string) string {
	t.Helper()
	thread, err := c.api.createThread(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.api.stream(ctx, thread, input, nil, firstEnd); err != nil {
		t.Fatal(err)
	}
	waitCompleted(ctx, t, c, thread, 1)
	return thread
}
