// Package agent declares agents, their tools and guardrails, and the
// [Network] that registers agents by name with a version fingerprint. Agents
// refer to each other only by name, so every run state stays serialisable.
package agent
