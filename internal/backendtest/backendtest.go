// Package backendtest gives tests what package service assembles beside a
// store: the draft broker it chooses for the store's backend, workers
// started until the test ends, and a logger quiet unless BATON_TEST_LOG is
// set. Package continuation's tests and bench/continuationbench share it.
package backendtest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/draft/pgbroker"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
)

// Logger discards, or logs at debug level to stderr when BATON_TEST_LOG
// is set.
func Logger() *slog.Logger {
	if os.Getenv("BATON_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Broker returns the draft broker package service chooses for st: on
// PostgreSQL a NOTIFY broker (logging to [Logger]), started now and closed
// when tb ends; elsewhere the in-process hub.
func Broker(tb testing.TB, st store.Store) draft.Broker {
	tb.Helper()
	s, ok := st.(*pgstore.Store)
	if !ok {
		return draft.NewHub(st)
	}
	br := pgbroker.New(s, &pgbroker.Options{Logger: Logger()})
	if err := br.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { br.Close() })
	return br
}

// StartUntilEnd calls start, and stop when tb ends, allowing it 10s.
func StartUntilEnd(tb testing.TB, start, stop func(context.Context) error) {
	tb.Helper()
	if err := start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = stop(ctx)
	})
}
