package runstate

import (
	"encoding/json"
	"fmt"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/transfer"
)

// Schema version 1 is the encoding from before agent → agent transfers had
// their own word: the same state, with the transfer fields named after
// handoffs. The types below read it; decodeSchema1 maps it to the current
// version.

// state1 is a State of schema version 1. Its own fields take the JSON names
// that version 1 gave the transfer fields, and shadow State's.
type state1 struct {
	State
	Handoff  *transfer.Context `json:"handoff,omitempty"`
	Handoffs int               `json:"handoffs"`
	Stack    []frame1          `json:"stack,omitempty"`
	// Transfer and Transfers shadow the names of version 2, which a
	// version 1 state does not have: decodeSchema1 refuses them.
	Transfer  json.RawMessage `json:"transfer,omitempty"`
	Transfers json.RawMessage `json:"transfers,omitempty"`
}

// frame1 is a Frame of schema version 1.
type frame1 struct {
	Agent     string            `json:"agent"`
	Messages  []message.Message `json:"messages"`
	Handoff   *transfer.Context `json:"handoff,omitempty"`
	HandoffID string            `json:"handoff_id"`
}

// callHandoff1 is [CallTransfer] in schema version 1.
const callHandoff1 CallKind = "handoff"

// decodeSchema1 decodes b, a state of schema version 1, into a state of the
// current version. The caller validates it.
func decodeSchema1(b []byte) (*State, error) {
	var v state1
	if err := decodeStrict(b, &v); err != nil {
		return nil, err
	}
	if v.Transfer != nil || v.Transfers != nil {
		return nil, fmt.Errorf("%w: a schema version 1 state has no transfer or transfers (it says handoff, handoffs)", ErrCorrupt)
	}
	s := &v.State
	s.SchemaVersion = SchemaVersion
	s.Transfer, s.Transfers = v.Handoff, v.Handoffs
	if v.Stack != nil {
		s.Stack = make([]Frame, len(v.Stack))
		for i, f := range v.Stack {
			s.Stack[i] = Frame{Agent: f.Agent, Messages: f.Messages, Transfer: f.Handoff, TransferID: f.HandoffID}
		}
	}
	for i := range s.Pending {
		switch s.Pending[i].Kind {
		case callHandoff1:
			s.Pending[i].Kind = CallTransfer
		case CallTransfer:
			return nil, fmt.Errorf("%w: pending call %d has unknown kind %q in schema version 1", ErrCorrupt, i, CallTransfer)
		}
	}
	return s, nil
}
