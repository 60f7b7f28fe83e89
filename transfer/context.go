package transfer

import "encoding/json"

// Type names how control moved. It is persisted as a stable string.
type Type string

// Transfer types.
const (
	// TypeTransfer is a model-chosen transfer through a transfer tool.
	TypeTransfer Type = "transfer"
	// TypeReturn is a transfer whose target gives control back to its caller
	// once it answers.
	TypeReturn Type = "return"
	// TypeReturned is control coming back to the caller of a TypeReturn transfer.
	TypeReturned Type = "returned"
	// TypeSequential is the next step of a fixed pipeline.
	TypeSequential Type = "sequential"
	// TypeRule is an automatic transfer decided by a rule on run state.
	TypeRule Type = "rule"
)

// Context is what travels with a transfer to its target: who transferred, why,
// and the validated structured data the model filled in as the transfer tool's
// arguments. The target reads it from its run context and sees it rendered as
// a short block in its system prompt (see [Context.Render]).
type Context struct {
	// ID identifies this transfer, unique within a run.
	ID   string `json:"id"`
	From string `json:"from"`
	To   string `json:"to"`
	Type Type   `json:"type"`
	// Tool is the transfer tool that was called, empty for policy transfers.
	Tool string `json:"tool,omitempty"`
	// Reason is the model's or the policy's reason, when given.
	Reason string `json:"reason,omitempty"`
	// ExpectedOutput is what the source expects back, when given.
	ExpectedOutput string `json:"expected_output,omitempty"`
	// Data is the validated tool-argument object (the typed context), if any.
	Data json.RawMessage `json:"data,omitempty"`
	// History is the history policy that was applied.
	History HistoryPolicy `json:"history"`
	// Transforms lists the transforms that were applied, in order; a transform
	// that failed and fell back is not listed.
	Transforms []string `json:"transforms,omitempty"`
}
