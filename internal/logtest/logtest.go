// Package logtest captures what a logger writes, for tests that check its
// JSON records.
package logtest

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
)

// Buffer collects what is written to it. It is safe for concurrent use: a
// logger shared by parallel tests may write to it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// New returns a JSON logger that writes records of every level into a new
// Buffer.
func New() (*slog.Logger, *Buffer) {
	b := &Buffer{}
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Records returns the JSON records whose msg is msg, in order. It fails tb
// when a line is not a JSON object.
func (b *Buffer) Records(tb testing.TB, msg string) []map[string]any {
	tb.Helper()
	var out []map[string]any
	for line := range bytes.Lines([]byte(b.String())) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			tb.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}
