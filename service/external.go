package service

import (
	"errors"
	"net/http"

	"github.com/batonhq/baton/a2aremote"
	"github.com/batonhq/baton/mcptool"
	"github.com/batonhq/baton/netspec"
)

// This file is what the service reaches outside the process for the
// networks it loads: MCP servers (package mcptool) and remote A2A agents
// (package a2aremote). The MCP sessions are process resources: Load opens
// them (a network's tools are the tools its servers list), Service.Close
// ends them; Start and Stop leave them alone (a call in flight when the
// service stops ends with its run).

// external returns the netspec options of opts for MCP servers and remote
// agents, and the sessions Load opened itself (nil when opts.MCP is set).
func external(opts LoadOptions, client *http.Client) (mcp *mcptool.Sessions, owned bool, o netspec.Options) {
	mcp, owned = opts.MCP, false
	if mcp == nil {
		mcp, owned = mcptool.New(mcptool.Options{Logger: opts.Logger, HTTPClient: opts.HTTPClient}), true
	}
	return mcp, owned, netspec.Options{MCP: mcp.Resolve, Remote: a2aremote.Factory(a2aremote.Options{HTTPClient: client, Logger: opts.Logger})}
}

// closeDefinitions calls the Close of each definition.
func closeDefinitions(defs []Definition) error {
	var errs []error
	for _, d := range defs {
		if d.Close != nil {
			errs = append(errs, d.Close())
		}
	}
	return errors.Join(errs...)
}
