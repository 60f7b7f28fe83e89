// Package runtext folds a run's events into the text of its answer, as the
// adapters that answer with one text (OpenAI's chat completions and
// responses, MCP's tool results) give it.
package runtext

import (
	"encoding/json"
	"strings"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/server/internal/runlog"
)

// Answer is the text of every assistant message of a run, in order,
// separated by blank lines, whether a message's text came as text deltas
// or whole. The zero value is an empty answer. An Answer is not safe for
// concurrent use.
type Answer struct {
	text strings.Builder
	// deltas is set when the current message's text came as deltas.
	deltas bool
}

// Add folds an event of a run's log and returns the text it adds: a text
// delta's, or the text of a message that did not come as deltas; a new
// message's text after a blank line. Other events add nothing.
func (a *Answer) Add(e runlog.Entry) string {
	var out string
	switch runner.EventType(e.Type) {
	case runner.TypeTextDelta:
		var ev runner.TextDeltaEvent
		if json.Unmarshal(e.Data, &ev) == nil && ev.Delta != "" {
			if !a.deltas {
				out = a.sep()
				a.deltas = true
			}
			out += ev.Delta
		}
	case runner.TypeMessage:
		if !a.deltas {
			var ev runner.MessageEvent
			if json.Unmarshal(e.Data, &ev) == nil && ev.Text != "" {
				out = a.sep() + ev.Text
			}
		}
		a.deltas = false
	}
	a.text.WriteString(out)
	return out
}

// Note adds text of the adapter's own as a message of its own (after a
// blank line when the answer has text) and returns what it added.
func (a *Answer) Note(text string) string {
	out := a.sep() + text
	a.text.WriteString(out)
	return out
}

// sep is what goes before a new message's text: a blank line, unless the
// answer is empty.
func (a *Answer) sep() string {
	if a.text.Len() > 0 {
		return "\n\n"
	}
	return ""
}

// String returns the answer so far.
func (a *Answer) String() string { return a.text.String() }
