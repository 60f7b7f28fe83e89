package summary

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/retry"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
)

// DefaultAgent is the Request.Agent of the summary model call (the scripted
// model keys its script on it).
const DefaultAgent = "summariser"

// DefaultInstructions is the system prompt of the summary model call.
const DefaultInstructions = `You summarise a conversation so that it can continue in a new thread with no access to the old one.
Reply with one JSON object and nothing else: {"title": string, "body": [string, ...], "tldr": string}.
- title: the subject, in a few words.
- body: 3 to 6 short points, one line each: what the user wants, what was decided or done (keep concrete names, numbers and ids), what is still open.
- tldr: one sentence: where things stand and what comes next.
Stay under 150 words in all. Use only facts from the conversation.`

// ErrNothingToSummarise is returned by [Summarise] when the messages hold no
// user message to start a summary from.
var ErrNothingToSummarise = errors.New("summary: nothing to summarise: no user message")

// Options configure [Summarise]. Every zero field means its default.
type Options struct {
	// HandoffID, the thread handoff's id, identifies the summary in logs
	// (handoff_id) and is copied into the [Result]. Defaults to a new [NewID].
	HandoffID string
	// ThreadID is the thread summarised, for logs (thread_id) and errors.
	ThreadID string

	// Agent is the Request.Agent of the model call. Defaults to [DefaultAgent].
	Agent string
	// Instructions is the system prompt. Defaults to [DefaultInstructions].
	Instructions string
	// Settings are the model settings; MaxTokens is overridden by MaxTokens.
	Settings model.Settings
	// Select tunes the selection; Budget is the token budget of [Trim]
	// (defaults to [DefaultBudget]).
	Select SelectOptions
	Budget int
	// MaxTokens caps the model's output. Defaults to [DefaultMaxTokens].
	MaxTokens int
	// MaxChars is the Markdown length, in runes, past which it is truncated
	// (and the truncation logged). Defaults to [DefaultMaxChars].
	MaxChars int
	// MaxAttempts bounds tries of the model call on transient errors
	// (exponential backoff with jitter, honouring Retry-After). Defaults to 3.
	MaxAttempts int

	// Logger defaults to slog.Default(). Now defaults to time.Now. Sleep
	// replaces the retry wait, for tests.
	Logger *slog.Logger
	Now    func() time.Time
	Sleep  func(ctx context.Context, d time.Duration) error
}

// Result is a summary made by [Summarise], with what produced it. Package
// threadhandoff turns it into a proposal that a person approves.
type Result struct {
	// HandoffID is Options.HandoffID, or the id made for it.
	HandoffID string `json:"handoff_id"`
	// Summary is the structured summary; Markdown its rendering, truncated
	// to MaxChars runes when Truncated is set.
	Summary   Summary `json:"summary_json"`
	Markdown  string  `json:"summary_md"`
	Truncated bool    `json:"truncated,omitempty"`
	// ModelRunID identifies the summary model call in logs; RequestID and
	// Model are what the provider reported.
	ModelRunID string `json:"model_run_id"`
	RequestID  string `json:"request_id,omitempty"`
	Model      string `json:"model,omitempty"`
	// Usage is what the call cost; TokensUsed is Usage.Total().
	Usage      message.Usage `json:"usage"`
	TokensUsed int64         `json:"tokens_used"`
	// Messages is how many messages were summarised, InputTokens their
	// [HistoryTokens].
	Messages    int       `json:"messages"`
	InputTokens int       `json:"input_tokens"`
	CreatedAt   time.Time `json:"created_at"`
}

// Summarise selects and trims msgs ([Select], then [Trim] to opts.Budget),
// asks m for a [Summary] through structured output ([Schema], capped at
// opts.MaxTokens output tokens), validates it ([ParseSummary]) and renders
// it to Markdown, truncated past opts.MaxChars runes (logged with the
// thread handoff id). It has no side effects beside the model call and the logs.
//
// Transient model errors are retried. Output that is not a valid summary is
// an *[InvalidSummaryError]; messages without a user message
// [ErrNothingToSummarise]. Summarise does not modify msgs.
func Summarise(ctx context.Context, m model.Model, msgs []message.Message, opts Options) (*Result, error) {
	if m == nil {
		return nil, errors.New("summary: no summary model")
	}
	o := opts.withDefaults()
	sel := Trim(Select(msgs, o.Select), o.Budget)
	if len(sel) == 0 {
		return nil, ErrNothingToSummarise
	}
	settings := o.Settings
	settings.MaxTokens = o.MaxTokens
	req := &model.Request{
		Agent:    o.Agent,
		System:   o.Instructions,
		Messages: []message.Message{message.User("Conversation to summarise:\n\n<transcript>\n" + Transcript(sel) + "</transcript>")},
		Settings: settings,
		Output:   &model.OutputSchema{Name: "handoff_summary", Schema: Schema, Strict: true},
	}
	runID := NewID()
	log := o.Logger.With("handoff_id", o.HandoffID, "model_run_id", runID, "thread_id", o.ThreadID)
	var resp *model.Response
	err := retry.Do(ctx, retry.Policy{MaxAttempts: o.MaxAttempts}, o.Sleep, nil,
		func(attempt int, err error, d time.Duration) {
			log.WarnContext(ctx, "thread handoff summary model call failed, retrying", "attempt", attempt, "delay", d, "error", err)
		},
		func(int) error {
			var err error
			resp, err = model.Collect(m.Stream(ctx, req))
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("summarise thread %s: %w", o.ThreadID, err)
	}
	s, err := ParseSummary(resp.Message.Text())
	if err != nil {
		if resp.FinishReason == "length" {
			return nil, fmt.Errorf("summarise thread %s: output cut at %d tokens: %w", o.ThreadID, o.MaxTokens, err)
		}
		return nil, fmt.Errorf("summarise thread %s: %w", o.ThreadID, err)
	}
	md, cut := Truncate(s.Markdown(), o.MaxChars)
	p := &Result{
		HandoffID: o.HandoffID, Summary: s, Markdown: md, Truncated: cut,
		ModelRunID: runID, RequestID: resp.RequestID, Model: resp.Model,
		Usage: resp.Usage, TokensUsed: resp.Usage.Total(),
		Messages: len(sel), InputTokens: HistoryTokens(sel), CreatedAt: o.Now(),
	}
	if cut {
		log.WarnContext(ctx, "thread handoff summary truncated", "chars", len([]rune(s.Markdown())), "max_chars", o.MaxChars)
	}
	log.InfoContext(ctx, "thread handoff summary proposed", "tokens_used", p.TokensUsed, "request_id", p.RequestID,
		"messages", p.Messages, "input_tokens", p.InputTokens, "truncated", cut)
	return p, nil
}

func (o Options) withDefaults() Options {
	if o.HandoffID == "" {
		o.HandoffID = NewID()
	}
	if o.Agent == "" {
		o.Agent = DefaultAgent
	}
	if o.Instructions == "" {
		o.Instructions = DefaultInstructions
	}
	if o.Budget <= 0 {
		o.Budget = DefaultBudget
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	if o.MaxChars <= 0 {
		o.MaxChars = DefaultMaxChars
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Transcript renders msgs as plain text for the summary model: one
// "role: text" entry per message, tool calls as "called name {args}", tool
// results as "tool name: output", images as "[image]". Reasoning is left out.
func Transcript(msgs []message.Message) string {
	var b strings.Builder
	for i := range msgs {
		m := &msgs[i]
		who := string(m.Role)
		if m.Role == message.RoleAssistant && m.Agent != "" {
			who += " (" + m.Agent + ")"
		}
		for j := range m.Parts {
			p := &m.Parts[j]
			switch p.Type {
			case message.PartText:
				if strings.TrimSpace(p.Text) == "" {
					continue
				}
				b.WriteString(who + ": " + strings.TrimSpace(p.Text) + "\n")
			case message.PartToolCall:
				b.WriteString(who + " called " + p.Name + " " + string(p.Arguments) + "\n")
			case message.PartToolResult:
				status := ""
				if p.IsError {
					status = " (error)"
				}
				b.WriteString("tool " + p.Name + status + ": " + strings.TrimSpace(p.Text) + "\n")
			case message.PartImage:
				b.WriteString(who + ": [image]\n")
			}
		}
	}
	return b.String()
}
