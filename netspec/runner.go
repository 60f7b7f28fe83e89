package netspec

import "github.com/batonhq/baton/runner"

// RunnerConfig returns the config of a runner for the loaded network: its
// network, its policy (policy.Explicit when the file declares none) and its
// picker (the entry agent when the file declares none). The other fields are
// runner.Config's defaults (no checkpoints, a logger that discards); set
// them on the result before runner.New.
func (s *Spec) RunnerConfig() runner.Config {
	return runner.Config{Network: s.Network, Policy: s.Policy, Picker: s.Picker}
}
