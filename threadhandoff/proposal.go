package threadhandoff

import (
	"github.com/batonhq/baton/summary"
)

// Proposal is a summary awaiting a person's decision, with what produced
// it. [Service.Preview] makes one and [Service.Propose] stores it for a
// decision ([Service.Decide]); it has no side effects until decided.
type Proposal struct {
	// Result is the summary and what produced it.
	summary.Result
	// Owner owns the parent thread; AssistantID is the agent whose memory
	// receives the summary; ParentThreadID is the thread summarised.
	Owner          string `json:"owner"`
	AssistantID    string `json:"assistant_id"`
	ParentThreadID string `json:"parent_thread_id"`
	// ThroughSeq is the seq of the parent's last message when it was
	// summarised: a message after it makes the proposal stale.
	ThroughSeq int64 `json:"through_seq,omitempty"`
}

// newProposal returns the proposal of r, a summary of thread parent of
// owner for the memory of assistant.
func newProposal(r *summary.Result, owner, assistant, parent string) *Proposal {
	return &Proposal{Result: *r, Owner: owner, AssistantID: assistant, ParentThreadID: parent}
}
