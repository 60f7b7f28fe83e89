package protocols_test

import (
	"github.com/batonhq/baton/server/internal/servertest"
	"github.com/batonhq/baton/server/protocols"
)

func init() { servertest.Protocols = protocols.All() }
