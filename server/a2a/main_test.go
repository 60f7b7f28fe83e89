package a2a_test

import (
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/a2a"
	"github.com/batonhq/baton/server/internal/servertest"
)

func init() { servertest.Protocols = []server.Protocol{a2a.Protocol{}} }
