package main

import (
	"flag"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/inspect"
	"github.com/batonhq/baton/service"
)

// TestWebhookRetentionFlag: --webhook-retention's days or Go duration
// become service.Config.WebhookRetention, 7 days by default, and 0 keeps
// none past delivery (a negative retention for the service).
func TestWebhookRetentionFlag(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + filepath.Join(t.TempDir(), "baton.db")
	checkRetentionFlag(t, db, "--webhook-retention", "WebhookRetention", service.DefaultWebhookRetention,
		func(c service.Config) time.Duration { return c.WebhookRetention })
}

// TestInspectRetentionFlag: --inspect-retention's days or Go duration
// become service.Config.InspectRetention, 7 days by default; 0 records
// nothing (a negative retention for the service); a negative value is
// refused by the flag.
func TestInspectRetentionFlag(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + filepath.Join(t.TempDir(), "baton.db")
	checkRetentionFlag(t, db, "--inspect-retention", "InspectRetention", inspect.DefaultRetention,
		func(c service.Config) time.Duration { return c.InspectRetention })
	if inspect.DefaultRetention != 7*24*time.Hour {
		t.Errorf("inspect.DefaultRetention %v, want 7 days", inspect.DefaultRetention)
	}
	var f serviceFlags
	if err := serveFlags(&f).Parse([]string{"--database", db, "--inspect-retention", "-1h"}); err == nil || !strings.Contains(err.Error(), "cannot be negative") {
		t.Errorf("--inspect-retention -1h: %v, want it refused as negative", err)
	}
}

// checkRetentionFlag checks a retention flag of baton serve: none gives
// def; 3d and 90m, days and a Go duration, give 72h and 90m; 0 gives -1 (a
// negative retention for the service). field names what get reads of the
// service.Config.
func checkRetentionFlag(t *testing.T, db, flag, field string, def time.Duration, get func(service.Config) time.Duration) {
	t.Helper()
	for _, tt := range []struct {
		args []string
		want time.Duration
	}{
		{nil, def},
		{[]string{flag, "3d"}, 72 * time.Hour},
		{[]string{flag, "90m"}, 90 * time.Minute},
		{[]string{flag, "0"}, -1},
	} {
		cfg, err := serveConfig(t, db, tt.args)
		if got := get(cfg); err != nil || got != tt.want {
			t.Errorf("%v: %s %v, %v; want %v", tt.args, field, got, err, tt.want)
		}
	}
}

// serveFlags registers baton serve's service flags in f on a new flag set.
func serveFlags(f *serviceFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.register(fs, true)
	return fs
}

// serveConfig parses baton serve's service flags (--database db, then
// args) and returns their service.Config.
func serveConfig(t *testing.T, db string, args []string) (service.Config, error) {
	t.Helper()
	var f serviceFlags
	if err := serveFlags(&f).Parse(append([]string{"--database", db}, args...)); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return f.config(nil, slog.New(slog.DiscardHandler), nil)
}
