// Package netspec loads a network declared in YAML into an agent.Network,
// with its policy and picker, and reports every problem of a file with its
// line number. The format is documented in docs/network-yaml.md.
package netspec
