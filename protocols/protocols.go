// Package protocols lists the wire protocols baton serves beside its own
// API: OpenAI's (server/openai), AG-UI (server/agui), A2A (server/a2a) and
// MCP (server/mcp).
// Every server that serves them all — `baton serve`, the benchmarks —
// mounts [All]; its tests check what holds on every route of every
// protocol (authentication, tenancy, bad input, shutdown). It lives
// outside server/ because it is not an adapter: the adapters meet only in
// the server's core, and this list is the assembly's choice of them.
package protocols

import (
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/a2a"
	"github.com/batonhq/baton/server/agui"
	"github.com/batonhq/baton/server/mcp"
	"github.com/batonhq/baton/server/openai"
)

// All returns every protocol, for server.Config.Protocols.
func All() []server.Protocol {
	return []server.Protocol{openai.Protocol{}, agui.Protocol{}, a2a.Protocol{}, mcp.Protocol{}}
}
