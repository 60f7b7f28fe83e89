package threadhandoff

import (
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/summary"
)

// Proposal is a summary awaiting a person's decision, with what produced
// it: the input of [Service.Decide]. [Service.Preview] and
// [ProposalFromInterrupt] make one; it has no side effects until decided.
type Proposal struct {
	HandoffID string `json:"handoff_id"`
	// Owner owns the parent thread; AssistantID is the agent whose memory
	// receives the summary; ParentThreadID is the thread summarised.
	Owner          string `json:"owner"`
	AssistantID    string `json:"assistant_id"`
	ParentThreadID string `json:"parent_thread_id"`
	// Summary is the structured summary; Markdown its rendering, truncated
	// to MaxChars runes when Truncated is set.
	Summary   summary.Summary `json:"summary_json"`
	Markdown  string          `json:"summary_md"`
	Truncated bool            `json:"truncated,omitempty"`
	// ModelRunID identifies the summary model call in logs; RequestID and
	// Model are what the provider reported.
	ModelRunID string `json:"model_run_id"`
	RequestID  string `json:"request_id,omitempty"`
	Model      string `json:"model,omitempty"`
	// Usage is what the call cost; TokensUsed is Usage.Total().
	Usage      message.Usage `json:"usage"`
	TokensUsed int64         `json:"tokens_used"`
	// Messages is how many messages were summarised, InputTokens their
	// summary.HistoryTokens.
	Messages    int       `json:"messages"`
	InputTokens int       `json:"input_tokens"`
	CreatedAt   time.Time `json:"created_at"`
}

// newProposal returns the proposal of r, a summary of thread parent of
// owner for the memory of assistant.
func newProposal(r *summary.Result, owner, assistant, parent string) *Proposal {
	return &Proposal{
		HandoffID: r.HandoffID, Owner: owner, AssistantID: assistant, ParentThreadID: parent,
		Summary: r.Summary, Markdown: r.Markdown, Truncated: r.Truncated,
		ModelRunID: r.ModelRunID, RequestID: r.RequestID, Model: r.Model,
		Usage: r.Usage, TokensUsed: r.TokensUsed,
		Messages: r.Messages, InputTokens: r.InputTokens, CreatedAt: r.CreatedAt,
	}
}
