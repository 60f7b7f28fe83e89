package agui_test

import (
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/agui"
	"github.com/batonhq/baton/server/internal/servertest"
)

func init() { servertest.Protocols = []server.Protocol{agui.Protocol{}} }
