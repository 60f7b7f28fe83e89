package threadhandoff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

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
// handoff: the payload of its stored interrupt ([Service.Propose]), which
// surfaces show to a person before a [Decision].
//
//	{"schema_version": 1, "interrupt_id": "…", "middleware_source": "baton.summary.handoff",
//	 "handoff_id": "…", "assistant_id": "…", "parent_thread_id": "…", "title": "…",
//	 "summary_md": "…", "summary_json": {"title": "…", "body": […], "tldr": "…"}, "through_seq": 12,
//	 "action_requests": [{"name": "handoff_summary", "description": "…",
//	   "args": {"handoff_id": "…", "summary_json": {…}, "summary_md": "…", "assistant_id": "…",
//	            "parent_thread_id": "…", "model_run_id": "…", "tokens_used": 123, "truncated": false}}],
//	 "allowed_decisions": ["approve", "edit", "reject"]}
//
// The proposal's fields at the top level repeat those of the action's args
// (additions within version 1: readers of the first payloads read the
// args); through_seq is the last message the summary covers.
type Interrupt struct {
	SchemaVersion int `json:"schema_version"`
	// ID is the handoff id, which is also the stored interrupt's id.
	ID               string `json:"interrupt_id"`
	MiddlewareSource string `json:"middleware_source"`
	// HandoffID, AssistantID, ParentThreadID, Title, Markdown and Summary
	// repeat the action's args; empty in payloads that predate them.
	HandoffID      string           `json:"handoff_id,omitempty"`
	AssistantID    string           `json:"assistant_id,omitempty"`
	ParentThreadID string           `json:"parent_thread_id,omitempty"`
	Title          string           `json:"title,omitempty"`
	Markdown       string           `json:"summary_md,omitempty"`
	Summary        *summary.Summary `json:"summary_json,omitempty"`
	// ThroughSeq is the seq of the parent's last message when it was
	// summarised (0: unknown).
	ThroughSeq       int64           `json:"through_seq,omitempty"`
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
	sum := p.Summary
	sum.Body = append([]string(nil), sum.Body...)
	return &Interrupt{
		SchemaVersion:    InterruptSchemaVersion,
		ID:               p.HandoffID,
		MiddlewareSource: MiddlewareSource,
		HandoffID:        p.HandoffID, AssistantID: p.AssistantID, ParentThreadID: p.ParentThreadID,
		Title: p.Summary.Title, Markdown: p.Markdown, Summary: &sum, ThroughSeq: p.ThroughSeq,
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

// ErrInvalidInterrupt is wrapped by the errors of [ParseInterrupt] (and so
// of a stored proposal whose payload does not parse).
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
	case in.HandoffID != "" && in.HandoffID != a.HandoffID,
		in.AssistantID != "" && in.AssistantID != a.AssistantID,
		in.ParentThreadID != "" && in.ParentThreadID != a.ParentThreadID,
		in.Markdown != "" && in.Markdown != a.Markdown:
		return bad("the proposal's fields differ from the %s action's args", ActionHandoffSummary)
	case in.ThroughSeq < 0:
		return bad("through_seq %d is negative", in.ThroughSeq)
	}
	if err := a.Summary.Validate(); err != nil {
		return bad("summary_json: %w", err)
	}
	return nil
}

// proposalOf returns the proposal of a checked interrupt, for owner (never
// taken from the payload).
func proposalOf(in *Interrupt, owner string) *Proposal {
	a := in.ActionRequests[0].Args
	return &Proposal{
		Result: summary.Result{HandoffID: a.HandoffID, Summary: a.Summary, Markdown: a.Markdown, Truncated: a.Truncated,
			ModelRunID: a.ModelRunID, TokensUsed: a.TokensUsed},
		Owner: owner, AssistantID: a.AssistantID, ParentThreadID: a.ParentThreadID, ThroughSeq: in.ThroughSeq,
	}
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

// Decision answers a handoff [Interrupt]: what [Service.Decide] applies,
// and what it records with the decided proposal (its JSON).
type Decision struct {
	Type DecisionType `json:"type"`
	// Title, for an edit, replaces the summary's title (one line, at most
	// MaxTitleBytes); when Markdown is not edited too, the Markdown is
	// rendered again with it.
	Title string `json:"title,omitempty"`
	// Markdown, for an edit, replaces the Markdown written into memory: not
	// blank, at most summary.Options.MaxChars runes (1000 by default).
	Markdown string `json:"summary_md,omitempty"`
	// Reason is an optional note, logged with a rejection; at most
	// MaxReasonBytes.
	Reason string `json:"reason,omitempty"`
	// Force approves a proposal whose thread has gained messages since it
	// was made (which is otherwise a *[StaleError]).
	Force bool `json:"force,omitempty"`
}

// Bounds of a [Decision].
const (
	MaxTitleBytes  = 200
	MaxReasonBytes = 4096
)

// ErrInvalidDecision is wrapped by the error of a decision that cannot be
// applied: an unknown type, an edit without a title or Markdown, with blank
// or oversized Markdown, a title too long, arguments of the wrong types.
var ErrInvalidDecision = errors.New("threadhandoff: invalid decision")

// DecisionError is an invalid [Decision]: Field names the offending field
// ("type", "args", "args.summary_md", "args.title", "reason"). It unwraps
// to [ErrInvalidDecision].
type DecisionError struct {
	Field  string
	Reason string
}

func (e *DecisionError) Error() string {
	return "threadhandoff: invalid decision: " + e.Reason
}

// Unwrap returns [ErrInvalidDecision].
func (e *DecisionError) Unwrap() error { return ErrInvalidDecision }

func badDecision(field, format string, a ...any) error {
	return &DecisionError{Field: field, Reason: fmt.Sprintf(format, a...)}
}

// ParseDecision reads a decision as the approval surface takes it (POST
// /v1/interrupts/{id}/decision): its type — approve, edit, reject, or
// decline for reject, in any case — and, for an edit, its args: a JSON
// object with summary_md and/or title, strings (other fields are refused).
// Approve and reject take no args (null or {} are accepted). The decision
// is then checked ([Decision.Validate]) with the default limits. Errors are
// *[DecisionError]s.
func ParseDecision(typ string, args []byte) (Decision, error) {
	var d Decision
	switch t := DecisionType(strings.ToLower(strings.TrimSpace(typ))); t {
	case DecisionApprove, DecisionEdit, DecisionReject:
		d.Type = t
	case "decline":
		d.Type = DecisionReject
	default:
		return Decision{}, badDecision("type", "type %q is not approve, edit or reject", typ)
	}
	trimmed := bytes.TrimSpace(args)
	if d.Type != DecisionEdit {
		if len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) && !bytes.Equal(trimmed, []byte("{}")) {
			return Decision{}, badDecision("args", "args are for an edit: give type edit with args summary_md and/or title")
		}
		return d, nil
	}
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return Decision{}, badDecision("args", "an edit needs args: {\"summary_md\": \"…\"} and/or {\"title\": \"…\"}")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &raw); err != nil || raw == nil {
		return Decision{}, badDecision("args", "args must be a JSON object with summary_md and/or title")
	}
	for k, v := range raw {
		var dst *string
		switch k {
		case "summary_md":
			dst = &d.Markdown
		case "title":
			dst = &d.Title
		default:
			return Decision{}, badDecision("args", "args has an unknown field %q: an edit takes summary_md and title", k)
		}
		if err := json.Unmarshal(v, dst); err != nil || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return Decision{}, badDecision("args."+k, "args.%s must be a string", k)
		}
		if strings.TrimSpace(*dst) == "" {
			return Decision{}, badDecision("args."+k, "args.%s is empty", k)
		}
	}
	if err := d.Validate(0); err != nil {
		return Decision{}, err
	}
	return d, nil
}

// Validate checks d: a known type (decline is taken for reject) and, for
// an edit, a title or Markdown; Markdown that is not blank and has at most
// maxChars runes (summary.DefaultMaxChars when 0); a title of at most
// MaxTitleBytes; a reason of at most MaxReasonBytes. Errors are
// *[DecisionError]s.
func (d Decision) Validate(maxChars int) error {
	_, err := d.normalise(maxChars)
	return err
}

// normalise returns d checked, its type in canonical form.
func (d Decision) normalise(maxChars int) (Decision, error) {
	if maxChars <= 0 {
		maxChars = summary.DefaultMaxChars
	}
	switch t := DecisionType(strings.ToLower(strings.TrimSpace(string(d.Type)))); t {
	case DecisionApprove, DecisionEdit, DecisionReject:
		d.Type = t
	case "decline":
		d.Type = DecisionReject
	default:
		return Decision{}, badDecision("type", "type %q is not approve, edit or reject", d.Type)
	}
	if len(d.Reason) > MaxReasonBytes {
		return Decision{}, badDecision("reason", "the reason is %d bytes; at most %d", len(d.Reason), MaxReasonBytes)
	}
	if d.Type != DecisionEdit {
		return d, nil
	}
	title, md := strings.TrimSpace(d.Title), strings.TrimSpace(d.Markdown)
	switch {
	case title == "" && md == "":
		return Decision{}, badDecision("args", "an edit needs a summary (summary_md) or a title")
	case len(title) > MaxTitleBytes:
		return Decision{}, badDecision("args.title", "the title is %d bytes; at most %d", len(title), MaxTitleBytes)
	case utf8.RuneCountInString(md) > maxChars:
		return Decision{}, badDecision("args.summary_md", "the summary is %d characters; at most %d", utf8.RuneCountInString(md), maxChars)
	}
	return d, nil
}

// apply returns the summary and Markdown that d, a normalised decision,
// makes of p, whether it edited anything and whether the Markdown written
// is a truncated one. It writes nothing.
func (d Decision) apply(p *Proposal) (s summary.Summary, md string, edited, truncated bool) {
	if d.Type != DecisionEdit {
		return p.Summary, p.Markdown, false, p.Truncated
	}
	title, md := strings.TrimSpace(d.Title), strings.TrimSpace(d.Markdown)
	s = p.Summary
	if title != "" {
		s = s.WithTitle(title)
	} else {
		s.Body = append([]string(nil), s.Body...)
	}
	if md == "" {
		md = s.Markdown()
	}
	return s, memory.Escape(strings.ToValidUTF8(md, "\uFFFD")), true, false
}
