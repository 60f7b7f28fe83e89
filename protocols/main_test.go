package protocols_test

import (
	"github.com/batonhq/baton/internal/servertest"
	"github.com/batonhq/baton/protocols"
)

func init() { servertest.Protocols = protocols.All() }
