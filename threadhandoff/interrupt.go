package threadhandoff

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/summary"
)

// Interrupt payload constants. They are part of the public wire format.
const (
	// InterruptSchemaVersion is the version of [Interrupt]'s JSON shape.
	InterruptSchemaVersion = 1
	// MiddlewareSource is the middleware_source of handoff interrupts. It
	// keeps the value of version 1, from when the handoff lived in package
	// summary.
	MiddlewareSource = "baton.summary.handoff"
	// ActionHandoffSummary is the name of the action request to approve.
	ActionHandoffSummary = "handoff_summary"
)

// Interrupt is the stable, versioned approval payload of a thread → thread
// handoff: surfaces show it to a person and send back a [Decision].
//
//	{"schema_version": 1, "interrupt_id": "…", "middleware_source": "baton.summary.handoff",
//	 "action_requests": [{"name": "handoff_summary", "description": "…",
//	   "args": {"handoff_id": "…", "summary_json": {"title": "…", "body": […], "tldr": "…"},
//	            "summary_md": "…", "assistant_id": "…", "parent_thread_id": "…",
//	            "model_run_id": "…", "tokens_used": 123, "truncated": false}}],
//	 "allowed_decisions": ["approve", "edit", "reject"]}
type Interrupt struct {
	SchemaVersion int `json:"schema_version"`
	// ID is the handoff id.
	ID               string          `json:"interrupt_id"`
	MiddlewareSource string          `json:"middleware_source"`
	ActionRequests   []ActionRequest `json:"action_requests"`
	AllowedDecisions []DecisionType  `json:"allowed_decisions"`
}

// ActionRequest is the one action of a handoff [Interrupt].
type ActionRequest struct {
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	Args        HandoffArgs `json:"args"`
}

// HandoffArgs are the arguments of the handoff_summary action.
type HandoffArgs struct {
	HandoffID string `json:"handoff_id"`
	// Summary is the structured summary, an object.
	Summary summary.Summary `json:"summary_json"`
	// Markdown is the rendering that approval writes into memory.
	Markdown       string `json:"summary_md"`
	AssistantID    string `json:"assistant_id"`
	ParentThreadID string `json:"parent_thread_id"`
	ModelRunID     string `json:"model_run_id,omitempty"`
	TokensUsed     int64  `json:"tokens_used,omitempty"`
	Truncated      bool   `json:"truncated,omitempty"`
}

// Interrupt returns the approval payload of p.
func (p *Proposal) Interrupt() *Interrupt {
	return &Interrupt{
		SchemaVersion:    InterruptSchemaVersion,
		ID:               p.HandoffID,
		MiddlewareSource: MiddlewareSource,
		ActionRequests: []ActionRequest{{
			Name:        ActionHandoffSummary,
			Description: "Approve, edit or reject this summary. On approval it seeds a new child thread of " + p.ParentThreadID + ".",
			Args: HandoffArgs{
				HandoffID: p.HandoffID, Summary: p.Summary, Markdown: p.Markdown,
				AssistantID: p.AssistantID, ParentThreadID: p.ParentThreadID,
				ModelRunID: p.ModelRunID, TokensUsed: p.TokensUsed, Truncated: p.Truncated,
			},
		}},
		AllowedDecisions: []DecisionType{DecisionApprove, DecisionEdit, DecisionReject},
	}
}

// ErrInvalidInterrupt is wrapped by the errors of [ParseInterrupt] and
// [ProposalFromInterrupt].
var ErrInvalidInterrupt = errors.New("threadhandoff: invalid handoff interrupt")

// ParseInterrupt decodes and checks an [Interrupt]: a supported
// schema_version, the middleware source, exactly one handoff_summary action
// with a handoff id, assistant, parent thread, Markdown and a valid summary.
// Unknown fields are ignored (later minor additions of version 1).
func ParseInterrupt(b []byte) (*Interrupt, error) {
	var in Interrupt
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidInterrupt, err)
	}
	if err := in.check(); err != nil {
		return nil, err
	}
	return &in, nil
}

func (in *Interrupt) check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidInterrupt}, a...)...)
	}
	switch {
	case in.SchemaVersion != InterruptSchemaVersion:
		return bad("schema_version %d is not supported (want %d)", in.SchemaVersion, InterruptSchemaVersion)
	case in.MiddlewareSource != MiddlewareSource:
		return bad("middleware_source %q is not %q", in.MiddlewareSource, MiddlewareSource)
	case len(in.ActionRequests) != 1 || in.ActionRequests[0].Name != ActionHandoffSummary:
		return bad("want exactly one %s action request", ActionHandoffSummary)
	}
	a := in.ActionRequests[0].Args
	switch {
	case a.HandoffID == "" || a.AssistantID == "" || a.ParentThreadID == "":
		return bad("handoff_id, assistant_id and parent_thread_id are required")
	case in.ID != "" && in.ID != a.HandoffID:
		return bad("interrupt_id %q is not handoff_id %q", in.ID, a.HandoffID)
	case strings.TrimSpace(a.Markdown) == "":
		return bad("summary_md is empty")
	}
	if err := a.Summary.Validate(); err != nil {
		return bad("summary_json: %w", err)
	}
	return nil
}

// ProposalFromInterrupt rebuilds the proposal of a checked interrupt, for a
// surface that keeps the payload rather than the [Proposal] (a stateless
// server, say). owner is the authenticated caller: it is never taken from
// the payload. Markdown longer than maxChars runes
// ([summary.DefaultMaxChars] when 0) is truncated and marked so.
func ProposalFromInterrupt(in *Interrupt, owner string, maxChars int) (*Proposal, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	a := in.ActionRequests[0].Args
	md, cut := summary.Truncate(memory.Escape(a.Markdown), maxChars)
	return &Proposal{
		Result: summary.Result{HandoffID: a.HandoffID, Summary: a.Summary, Markdown: md, Truncated: a.Truncated || cut,
			ModelRunID: a.ModelRunID, TokensUsed: a.TokensUsed},
		Owner: owner, AssistantID: a.AssistantID, ParentThreadID: a.ParentThreadID,
	}, nil
}

// DecisionType is a person's answer to a handoff [Interrupt]. It is part of
// the wire format.
type DecisionType string

// Decision types.
const (
	// DecisionApprove writes the proposal as it is.
	DecisionApprove DecisionType = "approve"
	// DecisionEdit approves with a new title and/or new Markdown.
	DecisionEdit DecisionType = "edit"
	// DecisionReject writes nothing.
	DecisionReject DecisionType = "reject"
)

// Decision answers a handoff [Interrupt].
type Decision struct {
	Type DecisionType `json:"type"`
	// Title, for an edit, replaces the summary's title; when Markdown is not
	// edited too, the Markdown is rendered again with it.
	Title string `json:"title,omitempty"`
	// Markdown, for an edit, replaces the Markdown written into memory.
	Markdown string `json:"markdown,omitempty"`
	// Reason is an optional note, logged with a rejection.
	Reason string `json:"reason,omitempty"`
}

// ErrInvalidDecision is wrapped by the error of a decision that cannot be
// applied (unknown type, an edit without a title or Markdown).
var ErrInvalidDecision = errors.New("threadhandoff: invalid decision")

// apply returns the summary and Markdown that d makes of p, whether it
// edited anything and whether it truncated the edited Markdown. It writes
// nothing.
func (d Decision) apply(p *Proposal, maxChars int) (s summary.Summary, md string, edited, cut bool, err error) {
	switch d.Type {
	case DecisionApprove:
		return p.Summary, p.Markdown, false, false, nil
	case DecisionEdit:
	default:
		return summary.Summary{}, "", false, false, fmt.Errorf("%w: type %q is not approve, edit or reject", ErrInvalidDecision, d.Type)
	}
	title, md := strings.TrimSpace(d.Title), strings.TrimSpace(d.Markdown)
	if title == "" && md == "" {
		return summary.Summary{}, "", false, false, fmt.Errorf("%w: an edit needs a title or Markdown", ErrInvalidDecision)
	}
	s = p.Summary
	if title != "" {
		s = s.WithTitle(title)
	} else {
		s.Body = append([]string(nil), s.Body...)
	}
	if md == "" {
		md = s.Markdown()
	}
	md, cut = summary.Truncate(memory.Escape(strings.ToValidUTF8(md, "\uFFFD")), maxChars)
	return s, md, true, cut, nil
}
