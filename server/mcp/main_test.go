package mcp_test

import (
	"github.com/batonhq/baton/internal/servertest"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/mcp"
)

func init() { servertest.Protocols = []server.Protocol{mcp.Protocol{}} }
