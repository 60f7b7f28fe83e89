// Package toolargs checks the arguments of a tool call assembled from
// streamed fragments and makes up call ids for servers that send none.
package toolargs

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrNotObject is wrapped by [Normalize] when the arguments are valid JSON
// but not an object.
var ErrNotObject = errors.New("tool arguments are not a JSON object")

// ErrInvalid is wrapped by [Normalize] when the arguments are not valid JSON,
// typically because they were cut short.
var ErrInvalid = errors.New("tool arguments are not valid JSON")

// Normalize returns the JSON object of a tool call's arguments from the text
// the provider streamed: surrounding white space is trimmed, empty text and
// null mean {}, and a JSON string holding an object (double-encoded
// arguments, as some servers send) is unwrapped. Anything else that is not a
// JSON object is an error. The bytes of a valid object are kept as sent.
func Normalize(s string) (json.RawMessage, error) {
	b := bytes.TrimSpace([]byte(s))
	if len(b) == 0 || string(b) == "null" {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("%w (%d bytes, ends %q)", ErrInvalid, len(b), tail(b))
	}
	switch b[0] {
	case '{':
		return json.RawMessage(b), nil
	case '"':
		var inner string
		if json.Unmarshal(b, &inner) == nil {
			in := bytes.TrimSpace([]byte(inner))
			if len(in) > 0 && in[0] == '{' && json.Valid(in) {
				return json.RawMessage(in), nil
			}
		}
	}
	return nil, ErrNotObject
}

func tail(b []byte) string {
	const n = 24
	if len(b) > n {
		return string(b[len(b)-n:])
	}
	return string(b)
}

// NewCallID returns a fresh call id ("call_" and 24 hex digits) for a call
// that came without one.
func NewCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// IDs keeps the call ids of one answer unique. The zero value is ready to
// use; it is not safe for concurrent use.
type IDs struct{ seen map[string]bool }

// Unique returns id, or a fresh one from [NewCallID] when id is empty or was
// returned before, and remembers what it returns.
func (s *IDs) Unique(id string) string {
	if id == "" || s.seen[id] {
		id = NewCallID()
	}
	if s.seen == nil {
		s.seen = make(map[string]bool)
	}
	s.seen[id] = true
	return id
}
