package netspec

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"sync"

	"github.com/goccy/go-yaml"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
)

// Recorder records what each agent's model answered during runs, so that a
// conversation with a real provider becomes a scripted network: a
// deterministic golden test. Use its Wrap as Options.WrapModel when loading,
// run, then Write. It is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	steps map[string][]StepSpec // by model owner: agent name, "picker", "summary"
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{steps: map[string][]StepSpec{}} }

// Wrap returns m recording its answers under name. It fits Options.WrapModel.
func (r *Recorder) Wrap(name string, m model.Model) model.Model {
	return model.Func(func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
		return func(yield func(model.Chunk, error) bool) {
			for c, err := range m.Stream(ctx, req) {
				if err == nil && c.Type == model.ChunkDone && c.Message != nil {
					r.record(name, &c)
				}
				if !yield(c, err) {
					return
				}
			}
		}
	})
}

// record keeps the answer of done, a ChunkDone, as a step: its text blocks
// (several stay several), reasoning, calls, every usage count, and how it
// ended when not as usual.
func (r *Recorder) record(name string, done *model.Chunk) {
	var st StepSpec
	texts := 0
	for _, p := range done.Message.Parts {
		switch p.Type {
		case message.PartText:
			if texts == 0 {
				st.Text = p.Text
			} else {
				st.Texts = append(st.Texts, p.Text)
			}
			texts++
		case message.PartReasoning:
			if p.Text != "" {
				if st.Reasoning != "" {
					st.Reasoning += "\n\n"
				}
				st.Reasoning += p.Text
			}
		case message.PartToolCall:
			var args any = json.RawMessage(`{}`)
			if len(p.Arguments) > 0 && json.Valid(p.Arguments) {
				args = json.RawMessage(p.Arguments)
			}
			st.ToolCalls = append(st.ToolCalls, CallSpec{ID: p.CallID, Name: p.Name, Arguments: args})
		}
	}
	switch done.FinishReason {
	case model.FinishLength, model.FinishContentFilter, model.FinishRefusal, model.FinishPauseTurn:
		st.FinishReason = done.FinishReason
		st.Refusal = done.Refusal
	}
	if u := done.Usage; !u.IsZero() {
		st.Usage = &UsageSpec{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedTokens: u.CachedTokens,
			CacheCreationTokens: u.CacheCreationTokens, ReasoningTokens: u.ReasoningTokens}
	}
	if st.Text == "" && len(st.Texts) == 0 && len(st.ToolCalls) == 0 && st.FinishReason == "" {
		st.Text = " " // an empty answer still takes a step of the script
	}
	r.mu.Lock()
	r.steps[name] = append(r.steps[name], st)
	r.mu.Unlock()
}

// Steps returns what was recorded under name.
func (r *Recorder) Steps(name string) []StepSpec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]StepSpec(nil), r.steps[name]...)
}

// Network returns f with every recorded model replaced by a scripted one
// that replays the recording: the agents, the picker's classifier and the
// summary model. Agents that were never called keep their model. Compact
// transform models are left as they are.
func (r *Recorder) Network(f *File) *File {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := *f
	out.Agents = append([]AgentSpec(nil), f.Agents...)
	script := func(ms *ModelSpec, name string) {
		steps := r.steps[name]
		if len(steps) == 0 {
			return
		}
		*ms = ModelSpec{Model: "scripted", Script: append([]StepSpec(nil), steps...)}
	}
	for i := range out.Agents {
		script(&out.Agents[i].ModelSpec, out.Agents[i].Name)
	}
	if f.Picker != nil && f.Picker.Classifier != nil {
		p := *f.Picker
		c := *f.Picker.Classifier
		script(&c.ModelSpec, "picker")
		p.Classifier = &c
		out.Picker = &p
	}
	if f.Summary != nil {
		s := *f.Summary
		script(&s.ModelSpec, "summary")
		out.Summary = &s
	}
	return &out
}

// Write writes the recorded network as YAML, loadable with [Load].
func (r *Recorder) Write(w io.Writer, f *File) error {
	j, err := json.Marshal(r.Network(f))
	if err != nil {
		return fmt.Errorf("netspec: record: %w", err)
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return fmt.Errorf("netspec: record: %w", err)
	}
	if _, err := io.WriteString(w, "# Recorded by baton run --record: every model answer replayed by the scripted model.\n"); err != nil {
		return err
	}
	_, err = w.Write(y)
	return err
}
