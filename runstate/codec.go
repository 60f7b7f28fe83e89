package runstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Sentinel errors; the concrete errors below wrap them.
var (
	// ErrCorrupt: the bytes are not a valid encoded State.
	ErrCorrupt = errors.New("runstate: corrupt state")
	// ErrUnknownVersion: the state was written by an unknown schema version.
	ErrUnknownVersion = errors.New("runstate: unknown schema version")
	// ErrIncompatible: the state was written under another network version.
	ErrIncompatible = errors.New("runstate: incompatible network version")
)

// VersionError reports a schema version this build cannot read.
type VersionError struct{ Version int }

func (e *VersionError) Error() string {
	return fmt.Sprintf("runstate: schema version %d is not supported (this build reads %d)", e.Version, SchemaVersion)
}

// Unwrap returns [ErrUnknownVersion].
func (e *VersionError) Unwrap() error { return ErrUnknownVersion }

// IncompatibleError refuses to resume a state written under another network
// fingerprint. It names both.
type IncompatibleError struct {
	Network    string
	Checkpoint string // fingerprint the state was written under
	Current    string // fingerprint of the network trying to resume it
}

func (e *IncompatibleError) Error() string {
	return fmt.Sprintf("runstate: checkpoint of network %q was written under version %s, the network now is %s; refusing to resume",
		e.Network, e.Checkpoint, e.Current)
}

// Unwrap returns [ErrIncompatible].
func (e *IncompatibleError) Unwrap() error { return ErrIncompatible }

// Encode returns the versioned JSON encoding of s.
func Encode(s *State) ([]byte, error) {
	if s == nil {
		return nil, errors.New("runstate: encode nil state")
	}
	c := *s
	c.SchemaVersion = SchemaVersion
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("runstate: encode: %w", err)
	}
	return b, nil
}

// Decode parses b as written by [Encode]. It returns an error wrapping
// [ErrCorrupt] for bytes that are not a complete state object, and a
// *[VersionError] for an unknown schema version.
func Decode(b []byte) (*State, error) {
	var head struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if head.SchemaVersion == nil {
		return nil, fmt.Errorf("%w: no schema_version", ErrCorrupt)
	}
	if *head.SchemaVersion != SchemaVersion {
		return nil, &VersionError{Version: *head.SchemaVersion}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s State
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data", ErrCorrupt)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return &s, nil
}

func (s *State) check() error {
	switch {
	case s.RunID == "":
		return errors.New("no run_id")
	case s.Agent == "":
		return errors.New("no agent")
	case s.Fingerprint == "":
		return errors.New("no fingerprint")
	}
	switch s.Status {
	case StatusRunning, StatusInterrupted, StatusSuspended, StatusCompleted, StatusFailed:
	default:
		return fmt.Errorf("unknown status %q", s.Status)
	}
	if s.Status == StatusInterrupted && s.Interrupt == nil {
		return errors.New("interrupted without an interrupt")
	}
	for i, p := range s.Pending {
		if p.Call.ID == "" {
			return fmt.Errorf("pending call %d has no id", i)
		}
		switch p.Kind {
		case CallTool, CallHandoff, CallAgentTool:
		default:
			return fmt.Errorf("pending call %d has unknown kind %q", i, p.Kind)
		}
	}
	return nil
}

// CheckFingerprint returns an *[IncompatibleError] unless s was written under
// the fingerprint current.
func (s *State) CheckFingerprint(current string) error {
	if s.Fingerprint != current {
		return &IncompatibleError{Network: s.Network, Checkpoint: s.Fingerprint, Current: current}
	}
	return nil
}
