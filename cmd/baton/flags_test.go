package main

import (
	"flag"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

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
		var f serviceFlags
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f.register(fs, true)
		if err := fs.Parse(append([]string{"--database", db}, tt.args...)); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		cfg, err := f.config(nil, slog.New(slog.DiscardHandler), nil)
		if err != nil || cfg.WebhookRetention != tt.want {
			t.Errorf("%v: WebhookRetention %v, %v; want %v", tt.args, cfg.WebhookRetention, err, tt.want)
		}
	}
}
