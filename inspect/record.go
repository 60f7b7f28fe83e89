package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/store"
)

// DefaultMaxCallBytes is the default cap of one call's recorded detail.
const DefaultMaxCallBytes = 256 << 10

// Config configures the [Extension].
type Config struct {
	// MaxCallBytes caps the JSON detail of one recorded call (request and
	// answer of a model call, arguments and output of a tool call).
	// Larger details keep their newest messages and drop the oldest, then
	// cut long texts; the record is marked truncated. Defaults to
	// [DefaultMaxCallBytes].
	MaxCallBytes int
}

// Extension returns the runner extension that stores the calls a runner
// records (runner.Config.RecordCalls) as call records of the run, in the
// transaction of the checkpoint that follows them: a call is stored
// exactly when the step it belongs to is. It needs the checkpoints of
// package threads (a store.Tx in runner.Boundary.Tx, the owner in the
// run's context) and does nothing for other checkpointers. Package service
// registers it, with RecordCalls, in every network's runner unless the
// retention is 0. It is safe for concurrent use.
func Extension(cfg Config) runner.Extension {
	if cfg.MaxCallBytes <= 0 {
		cfg.MaxCallBytes = DefaultMaxCallBytes
	}
	return &extension{cfg: cfg}
}

type extension struct {
	runner.NopExtension
	cfg Config
}

// AtBoundary implements runner.Extension.
func (e *extension) AtBoundary(ctx context.Context, b *runner.Boundary) error {
	if len(b.Calls) == 0 {
		return nil
	}
	tx, owner, ok, err := store.CheckpointTxIf(ctx, b.Tx, "inspect: calls", b.State.RunID)
	if !ok {
		return err
	}
	recs := make([]*store.CallRecord, len(b.Calls))
	for i := range b.Calls {
		recs[i] = e.record(b, &b.Calls[i])
	}
	if err := tx.RecordCalls(ctx, &store.RecordCallsParams{OwnerID: owner, Calls: recs, Deferred: true}); err != nil {
		return fmt.Errorf("inspect: record calls of run %s: %w", b.State.RunID, err)
	}
	return nil
}

// record is the stored form of c, made at boundary b.
func (e *extension) record(b *runner.Boundary, c *runner.CallRecord) *store.CallRecord {
	st := b.State
	r := &store.CallRecord{ThreadID: st.ThreadID, RunID: st.RunID, CheckpointID: b.CheckpointID, Step: st.Step, Kind: string(c.Kind),
		Agent: c.Agent, Sub: c.Sub, Model: c.Model, Name: c.Name, CallID: c.CallID, Error: text(c.Err), StartedAt: c.Start,
		FirstToken: c.FirstToken, Latency: c.Latency}
	if resp := c.Response; resp != nil {
		r.Usage, r.FinishReason, r.RequestID = resp.Usage, text(resp.FinishReason), text(resp.RequestID)
	}
	r.Detail, r.Truncated = encode(detailOf(c), e.cfg.MaxCallBytes)
	return r
}

// text is s as the store holds text: valid UTF-8 without NUL.
func text(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "")
}

// Detail is the recorded detail of a call, as GET …/steps/{step_id}
// shows it.
type Detail struct {
	Request *Request `json:"request,omitempty"`
	Answer  *Answer  `json:"answer,omitempty"`
	// Arguments and Output are a tool call's.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Output    *string         `json:"output,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// Type is a transfer's ("transfer", "return", "policy"…).
	Type     string    `json:"type,omitempty"`
	Attempts []Attempt `json:"attempts,omitempty"`
	// DroppedMessages counts the oldest messages of the request left out
	// to keep under the cap.
	DroppedMessages int `json:"dropped_messages,omitempty"`
}

// Request is a model request as sent.
type Request struct {
	System   string            `json:"system,omitempty"`
	Messages []message.Message `json:"messages"`
	Tools    []Tool            `json:"tools,omitempty"`
	Settings model.Settings    `json:"settings"`
	Output   *Output           `json:"output_schema,omitempty"`
}

// Tool is a tool offered to the model.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Output is the output schema asked for.
type Output struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict,omitempty"`
}

// Answer is a model's answer: its message (text, tool calls, reasoning),
// finish reason, usage.
type Answer struct {
	Message      message.Message `json:"message"`
	FinishReason string          `json:"finish_reason,omitempty"`
	Refusal      string          `json:"refusal,omitempty"`
	Model        string          `json:"model,omitempty"`
	RequestID    string          `json:"request_id,omitempty"`
	Usage        message.Usage   `json:"usage"`
}

// Attempt is a failed attempt before a retry.
type Attempt struct {
	Attempt    int       `json:"attempt"`
	Error      string    `json:"error"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS float64   `json:"duration_ms"`
}

func detailOf(c *runner.CallRecord) *Detail {
	d := &Detail{}
	for _, a := range c.Attempts {
		d.Attempts = append(d.Attempts, Attempt{Attempt: a.Attempt, Error: a.Err, StartedAt: a.Start.UTC(), DurationMS: ms(a.Duration)})
	}
	switch c.Kind {
	case runner.CallModel:
		if q := c.Request; q != nil {
			r := &Request{System: q.System, Messages: q.Messages, Settings: q.Settings}
			for _, t := range q.Tools {
				r.Tools = append(r.Tools, Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
			}
			if o := q.Output; o != nil {
				r.Output = &Output{Name: o.Name, Schema: o.Schema, Strict: o.Strict}
			}
			if r.Messages == nil {
				r.Messages = []message.Message{}
			}
			d.Request = r
		}
		if resp := c.Response; resp != nil {
			d.Answer = &Answer{Message: resp.Message, FinishReason: resp.FinishReason, Refusal: resp.Refusal, Model: resp.Model,
				RequestID: resp.RequestID, Usage: resp.Usage}
		}
	case runner.CallTool, runner.CallAgentTool:
		if json.Valid(c.Arguments) {
			d.Arguments = c.Arguments
		} else if len(c.Arguments) > 0 {
			s, _ := json.Marshal(string(c.Arguments))
			d.Arguments = s
		}
		out := c.Output
		d.Output, d.IsError = &out, c.IsError
	case runner.CallTransfer:
		d.Type = c.Output
	}
	return d
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// encode marshals d within max bytes: the request's oldest messages are
// dropped first (the newest one kept), then long texts cut. It reports
// whether anything was left out.
func encode(d *Detail, max int) (json.RawMessage, bool) {
	b, err := json.Marshal(d)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": "not encodable: " + err.Error()})
		return b, true
	}
	if len(b) <= max {
		return b, false
	}
	if r := d.Request; r != nil && len(r.Messages) > 1 {
		all := r.Messages
		lo, hi := 1, len(all)-1 // messages to drop: hi always fits better than lo
		for lo < hi {
			mid := (lo + hi) / 2
			r.Messages = all[mid:]
			if b, _ = json.Marshal(d); len(b) <= max {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		r.Messages, d.DroppedMessages = all[lo:], lo
		if b, _ = json.Marshal(d); len(b) <= max {
			return b, true
		}
	}
	// Still too large: texts cut to a share of the cap.
	keep := max / 4
	cut := func(s string) string {
		if len(s) <= keep {
			return s
		}
		return strings.ToValidUTF8(s[:keep], "") + "…[cut]"
	}
	if r := d.Request; r != nil {
		r.System = cut(r.System)
		r.Messages = cutMessages(r.Messages, cut)
		r.Tools = nil
	}
	if a := d.Answer; a != nil {
		a.Message = cutMessages([]message.Message{a.Message}, cut)[0]
	}
	if d.Output != nil {
		o := cut(*d.Output)
		d.Output = &o
	}
	if len(d.Arguments) > keep {
		s, _ := json.Marshal(cut(string(d.Arguments)))
		d.Arguments = s
	}
	if b, _ = json.Marshal(d); len(b) <= max {
		return b, true
	}
	b, _ = json.Marshal(map[string]any{"error": "detail larger than the cap", "bytes": len(b)})
	return b, true
}

func cutMessages(msgs []message.Message, cut func(string) string) []message.Message {
	out := make([]message.Message, len(msgs))
	for i, m := range msgs {
		parts := make([]message.Part, len(m.Parts))
		for j, p := range m.Parts {
			p.Text = cut(p.Text)
			p.Data = nil
			if len(p.Arguments) > 0 && len(p.Arguments) > len(cut(string(p.Arguments))) {
				p.Arguments = json.RawMessage(`"…[cut]"`)
			}
			parts[j] = p
		}
		m.Parts = parts
		out[i] = m
	}
	return out
}
