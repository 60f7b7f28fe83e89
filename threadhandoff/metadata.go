package threadhandoff

import (
	"encoding/json"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/summary"
)

// MetadataLastHandoff is the thread metadata namespace, on a parent thread,
// of its latest approved handoff (see [LastHandoff]). The namespace of the
// handoff itself is [store.MetadataThreadHandoff] ("handoff", see [Handoff]).
const MetadataLastHandoff = "last_handoff"

// Handoff is the value of the "handoff" metadata namespace of both threads
// of an approved handoff, the parent (source) and the child. Its JSON field
// names are a stable convention that surfaces may read.
type Handoff struct {
	HandoffID      string `json:"handoff_id"`
	SourceThreadID string `json:"source_thread_id"`
	ChildThreadID  string `json:"child_thread_id"`
	// AssistantID is the agent whose memory holds the summary.
	AssistantID string `json:"assistant_id"`
	// Pending is true from approval until the child's first complete turn
	// has seen the summary.
	Pending bool `json:"pending"`
	// CleanupRequired is true while the memory block still has to be reset
	// to its placeholder.
	CleanupRequired bool `json:"cleanup_required"`
	// LastCleanupAt is when the cleanup ran; absent (nil) before.
	LastCleanupAt *time.Time `json:"last_cleanup_at,omitempty"`
	ApprovedAt    time.Time  `json:"approved_at"`
}

// LastHandoff is the value of the [MetadataLastHandoff] namespace of a
// parent thread: its latest approved handoff and the summary it wrote.
type LastHandoff struct {
	HandoffID     string          `json:"handoff_id"`
	ChildThreadID string          `json:"child_thread_id"`
	AssistantID   string          `json:"assistant_id"`
	Title         string          `json:"title"`
	Summary       summary.Summary `json:"summary_json"`
	Markdown      string          `json:"summary_md"`
	Edited        bool            `json:"edited,omitempty"`
	ModelRunID    string          `json:"model_run_id,omitempty"`
	TokensUsed    int64           `json:"tokens_used,omitempty"`
	ApprovedAt    time.Time       `json:"approved_at"`
}

// HandoffOf returns the "handoff" metadata of th, or nil if it has none or
// it cannot be decoded.
func HandoffOf(th *store.Thread) *Handoff {
	var h Handoff
	if !decodeNS(th, store.MetadataThreadHandoff, &h) || h.HandoffID == "" {
		return nil
	}
	return &h
}

// LastHandoffOf returns the [MetadataLastHandoff] metadata of th, or nil.
func LastHandoffOf(th *store.Thread) *LastHandoff {
	var h LastHandoff
	if !decodeNS(th, MetadataLastHandoff, &h) || h.HandoffID == "" {
		return nil
	}
	return &h
}

func decodeNS(th *store.Thread, ns string, v any) bool {
	raw, ok := th.Metadata[ns]
	return ok && json.Unmarshal(raw, v) == nil
}

// handoffPatch is the merge patch that writes h whole: last_cleanup_at is
// removed (null) when h has none, so a value of an earlier handoff does not
// linger.
func handoffPatch(h *Handoff) json.RawMessage {
	b, _ := json.Marshal(h)
	if h.LastCleanupAt != nil {
		return b
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	m["last_cleanup_at"] = nil
	b, _ = json.Marshal(m)
	return b
}

// cleanedPatch is the merge patch of a finished cleanup.
func cleanedPatch(at time.Time) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"pending": false, "cleanup_required": false, "last_cleanup_at": at.UTC()})
	return b
}
