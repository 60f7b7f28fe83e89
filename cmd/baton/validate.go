package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/netspec"
)

// printTools writes, for each agent of a valid network, the tools its
// model is offered as resolved at load: declared tools, the tools of its
// MCP servers (as the servers listed them now), transfers and agent tools;
// a remote agent's card.
func printTools(w io.Writer, spec *netspec.Spec) {
	for _, a := range spec.Network.Agents() {
		fmt.Fprintf(w, "  %s: %s\n", a.Name, agentTools(spec, a))
	}
}

func agentTools(spec *netspec.Spec, a *agent.Agent) string {
	if card, ok := strings.CutPrefix(a.ModelName, "a2a:"); ok {
		return "remote A2A agent (card " + card + ")"
	}
	var out []string
	for _, t := range a.Tools {
		var notes []string
		if src := spec.ToolSources[a.Name][t.Name]; src != "" {
			notes = append(notes, src)
		}
		if t.RequireApproval != nil {
			notes = append(notes, "approval")
		}
		if t.Slow || a.Background {
			notes = append(notes, "background")
		}
		s := t.Name
		if len(notes) > 0 {
			s += " (" + strings.Join(notes, ", ") + ")"
		}
		out = append(out, s)
	}
	for _, h := range a.Transfers {
		out = append(out, h.Tool()+" (transfer to "+h.To+")")
	}
	for _, t := range a.AgentTools {
		out = append(out, t.Tool()+" (agent tool "+t.Agent+")")
	}
	if len(out) == 0 {
		return "no tools"
	}
	return strings.Join(out, ", ")
}
