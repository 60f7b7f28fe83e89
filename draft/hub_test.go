package draft_test

import (
	"testing"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/draft/drafttest"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/store"
)

func TestHub(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		drafttest.Run(t, func(t *testing.T) (draft.Broker, store.Store) {
			st := open(t)
			return draft.NewHub(st), st
		})
	})
}
