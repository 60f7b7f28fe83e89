package servertest

import (
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/batonhq/baton/server"
)

// Replica serves b's service through a new server, as another process on
// the same store would (nothing of b's runs in memory: a replica, or b
// restarted), mounting b's protocols, with its keys not cached and with
// followInterval (0: the default). It returns a copy of b whose Srv, HTTP
// and URL are the new server's; that server closes when t ends.
func (b *Bundle) Replica(t testing.TB, followInterval time.Duration) *Bundle {
	t.Helper()
	srv, err := server.New(server.Config{Service: b.Svc, Logger: slog.New(slog.DiscardHandler), KeyCacheTTL: -1,
		FollowInterval: followInterval, Protocols: b.Cfg.Protocols})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	r := *b
	r.Srv, r.HTTP, r.URL = srv, hs, hs.URL
	return &r
}
