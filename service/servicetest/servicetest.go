// Package servicetest assembles a [service.Service] for a test.
package servicetest

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/service"
)

// Started opens the service of cfg and starts its workers, failing t on an
// error; the service stops (for at most 10 s) and closes when t ends.
func Started(t testing.TB, cfg service.Config) *service.Service {
	t.Helper()
	svc, err := service.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(t.Context()); err != nil {
		_ = svc.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = svc.Stop(ctx)
		_ = svc.Close()
	})
	return svc
}
