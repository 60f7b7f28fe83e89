package mcp

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/batonhq/baton/server"
)

// Protocol serves each network as an MCP server over streamable HTTP at
// /mcp/{network}. The zero value is ready to mount.
type Protocol struct{}

// sessionIdle closes an MCP session that saw no request for this long.
const sessionIdle = time.Hour

// Mount registers the routes of the networks' MCP servers: POST (client
// messages), GET (the session's stream of server messages) and DELETE
// (the end of a session) on /mcp/{network}.
func (Protocol) Mount(c server.Core) {
	s := &api{c: c, handlers: map[string]http.Handler{}}
	for _, nw := range c.Networks() {
		srv := NewServer(c, nw, nil)
		s.handlers[nw.Name()] = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
			Logger:         c.Logger(),
			SessionTimeout: sessionIdle,
			// Every request carries a baton API key, which a rebound DNS
			// name does not have; a server behind a proxy on loopback sees
			// the public host name.
			DisableLocalhostProtection: true,
		})
	}
	// A session and its tool list need the read scope; a tool call starts
	// a run (the run scope) and an approval decides (decide), which the
	// core's StartTurn and Resume check.
	for _, m := range []string{"POST", "GET", "DELETE"} {
		c.Handle(m+" /mcp/{network}", server.Route{Scope: server.ScopeRead, Streaming: true}, s.serve)
	}
}

// api is the routes' handler on a core.
type api struct {
	c        server.Core
	handlers map[string]http.Handler
}

// callerKey is the key of the caller in the token info of a request.
const callerKey = "baton.caller"

// serve hands a request to the network's MCP handler, with the caller as
// the request's token info: the SDK binds a session to the owner who
// opened it (another owner's requests on it are refused) and gives the
// caller to the tool calls. A server shutting down ends the session's
// streams.
func (s *api) serve(w http.ResponseWriter, r *http.Request, c *server.Caller) error {
	h, ok := s.handlers[r.PathValue("network")]
	if !ok {
		return server.NotFound("network", r.PathValue("network"))
	}
	if err := c.RequireNetwork(r.PathValue("network")); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-s.c.ShuttingDown():
			cancel()
		case <-ctx.Done():
		}
	}()
	verify := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: c.Owner, Expiration: time.Now().Add(sessionIdle), Extra: map[string]any{callerKey: c}}, nil
	}
	auth.RequireBearerToken(verify, nil)(h).ServeHTTP(w, r.WithContext(ctx))
	return nil
}

// NewServer returns the MCP server of a network: one tool, named after the
// network, that runs turns through c. A nil caller takes each call's
// caller from its HTTP request ([Protocol]); stdio gives one.
func NewServer(c server.Core, nw *server.Network, caller *server.Caller) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "baton-" + nw.Name(), Title: "baton network " + nw.Name(), Version: nw.Agents().Fingerprint()},
		&mcp.ServerOptions{Logger: c.Logger(), Instructions: instructions(nw)})
	t := &tool{c: c, nw: nw, caller: caller}
	srv.AddTool(t.definition(), t.call)
	return srv
}

// ServeStdio serves the MCP server of network name over in and out (a
// desktop app's stdio) for caller, until the client ends the session or
// ctx ends.
func ServeStdio(ctx context.Context, c server.Core, name string, caller *server.Caller, in io.ReadCloser, out io.WriteCloser) error {
	nw, ok := c.Network(name)
	if !ok {
		return server.NotFound("network", name)
	}
	return NewServer(c, nw, caller).Run(ctx, &mcp.IOTransport{Reader: in, Writer: out})
}
