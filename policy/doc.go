// Package policy decides who acts next in a run. A [Policy] is consulted at
// step boundaries and may hand control to another agent (sequential
// pipelines, rules on run state, composites); model-chosen transfer tools need
// no policy ([Explicit]). A [Picker] chooses the first agent of a
// conversation: rules, an LLM classifier, sticky, with a default fallback.
package policy
