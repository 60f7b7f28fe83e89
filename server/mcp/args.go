package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// args are the arguments of a call of a network's tool.
type args struct {
	// Message is the user's turn; with Decision, the reason shown to the
	// model when the decision is reject.
	Message string `json:"message"`
	// ThreadID continues a thread (a previous result's thread_id); empty: a
	// new thread.
	ThreadID string `json:"thread_id,omitempty"`
	// Decision ("approve" or "reject") decides the approval that the run
	// RunID waits for.
	Decision string `json:"decision,omitempty"`
	RunID    string `json:"run_id,omitempty"`
}

// idPattern is the shape of a thread or run id a call may name.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

// errArgs is the error of arguments that cannot be a call.
var errArgs = errors.New("mcp: bad arguments")

// parseArgs reads and checks a call's arguments: a JSON object with the
// fields of [args] only.
func parseArgs(raw json.RawMessage) (*args, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, fmt.Errorf("%w: message is required", errArgs)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	var a args
	if err := d.Decode(&a); err != nil {
		return nil, fmt.Errorf("%w: want an object {\"message\", \"thread_id\"?, \"decision\"?, \"run_id\"?}: %v", errArgs, err)
	}
	if d.More() {
		return nil, fmt.Errorf("%w: one JSON object", errArgs)
	}
	if !utf8.ValidString(a.Message) {
		return nil, fmt.Errorf("%w: message is not UTF-8", errArgs)
	}
	for _, f := range []struct{ name, v string }{{"thread_id", a.ThreadID}, {"run_id", a.RunID}} {
		if f.v != "" && !idPattern.MatchString(f.v) {
			return nil, fmt.Errorf("%w: %s %q is not an id", errArgs, f.name, f.v)
		}
	}
	switch a.Decision {
	case "":
		if a.RunID != "" {
			return nil, fmt.Errorf("%w: run_id goes with a decision (approve or reject)", errArgs)
		}
		if strings.TrimSpace(a.Message) == "" {
			return nil, fmt.Errorf("%w: message is required", errArgs)
		}
	case "approve", "reject":
		if a.RunID == "" {
			return nil, fmt.Errorf("%w: a decision needs the run_id of the run that waits for it", errArgs)
		}
	default:
		return nil, fmt.Errorf("%w: decision %q: want approve or reject", errArgs, a.Decision)
	}
	return &a, nil
}

// inputSchema is the JSON Schema of the tool's arguments.
var inputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "message": {"type": "string", "description": "Your message to the network: the user's turn. With decision, the reason given to the agents when you reject."},
    "thread_id": {"type": "string", "description": "Continue a conversation: the thread_id a previous call returned. Leave it out to start a new one."},
    "decision": {"type": "string", "enum": ["approve", "reject"], "description": "Decide the approval an interrupted result asks for (with its run_id)."},
    "run_id": {"type": "string", "description": "With decision: the run_id of the interrupted result."}
  },
  "required": ["message"],
  "additionalProperties": false
}`)
