package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/netspec"
)

// Fingerprints returns the fingerprint of each agent of a network as a
// recording keeps them ([evalset.Recording].Agents): an agent whose
// fingerprint is the recording's is answered from it. It hashes the
// agent's own fingerprint (agent.Network.AgentFingerprint: instructions,
// model name, settings, tools, transfers, agent tools, guardrails, output
// schema) with, for a network loaded from a file (spec.File, else nil),
// the agent's declaration there (its model's script, rules and reply, its
// guardrails' patterns …). modelOverride, when set, is the live model that
// replaces every agent's (--model): it replaces the model in the
// fingerprint.
func Fingerprints(n *agent.Network, file *netspec.File, modelOverride string) map[string]string {
	decl := map[string]netspec.AgentSpec{}
	if file != nil {
		for _, a := range file.Agents {
			decl[a.Name] = a
		}
	}
	out := map[string]string{}
	for _, a := range n.Agents() {
		in := struct {
			Agent    string
			Declared *netspec.AgentSpec `json:",omitempty"`
			Model    string             `json:",omitempty"`
		}{Agent: n.AgentFingerprint(a.Name)}
		if d, ok := decl[a.Name]; ok {
			if modelOverride != "" && d.Remote == nil {
				d.ModelSpec = netspec.ModelSpec{Settings: d.Settings}
			}
			in.Declared = &d
		}
		if modelOverride != "" {
			in.Model = modelOverride
		}
		b, err := json.Marshal(in)
		if err != nil {
			continue // an agent that cannot be hashed is never unchanged
		}
		sum := sha256.Sum256(b)
		out[a.Name] = hex.EncodeToString(sum[:12])
	}
	return out
}

// Unchanged returns the agents whose fingerprint in current is the one
// recorded.
func Unchanged(current, recorded map[string]string) map[string]bool {
	out := map[string]bool{}
	for name, fp := range current {
		if fp != "" && recorded[name] == fp {
			out[name] = true
		}
	}
	return out
}
