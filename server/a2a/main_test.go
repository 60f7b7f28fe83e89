package a2a_test

import (
	"github.com/batonhq/baton/internal/servertest"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/a2a"
)

func init() { servertest.Protocols = []server.Protocol{a2a.Protocol{}} }
