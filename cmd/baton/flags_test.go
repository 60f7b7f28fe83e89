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
	for _, tt := range []struct {
		args []string
		want time.Duration
	}{
		{nil, service.DefaultWebhookRetention},
		{[]string{"--webhook-retention", "3d"}, 72 * time.Hour},
		{[]string{"--webhook-retention", "90m"}, 90 * time.Minute},
		{[]string{"--webhook-retention", "0"}, -1},
	} {
		cfg, err := serveConfig(t, db, tt.args)
		if err != nil || cfg.WebhookRetention != tt.want {
			t.Errorf("%v: WebhookRetention %v, %v; want %v", tt.args, cfg.WebhookRetention, err, tt.want)
		}
	}
}

// TestInspectRetentionFlag: --inspect-retention's days or Go duration
// become service.Config.InspectRetention, 7 days by default; 0 records
// nothing (a negative retention for the service); a negative value is
// refused by the flag.
func TestInspectRetentionFlag(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + filepath.Join(t.TempDir(), "baton.db")
	for _, tt := range []struct {
		args []string
		want time.Duration
	}{
		{nil, inspect.DefaultRetention},
		{[]string{"--inspect-retention", "3d"}, 72 * time.Hour},
		{[]string{"--inspect-retention", "90m"}, 90 * time.Minute},
		{[]string{"--inspect-retention", "0"}, -1},
	} {
		cfg, err := serveConfig(t, db, tt.args)
		if err != nil || cfg.InspectRetention != tt.want {
			t.Errorf("%v: InspectRetention %v, %v; want %v", tt.args, cfg.InspectRetention, err, tt.want)
		}
	}
	if inspect.DefaultRetention != 7*24*time.Hour {
		t.Errorf("inspect.DefaultRetention %v, want 7 days", inspect.DefaultRetention)
	}
	var f serviceFlags
	if err := serveFlags(&f).Parse([]string{"--database", db, "--inspect-retention", "-1h"}); err == nil || !strings.Contains(err.Error(), "cannot be negative") {
		t.Errorf("--inspect-retention -1h: %v, want it refused as negative", err)
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
