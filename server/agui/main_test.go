package agui_test

import (
	"github.com/batonhq/baton/internal/servertest"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/agui"
)

func init() { servertest.Protocols = []server.Protocol{agui.Protocol{}} }
