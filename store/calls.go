package store

import (
	"encoding/json"
	"time"

	"github.com/batonhq/baton/message"
)

// CallRecord is a call of a run recorded for the inspector: a model call,
// a tool call or a transfer (Kind "model", "tool", "agent_tool",
// "transfer"), written in the transaction of the checkpoint that followed
// it. The columns are what a run's steps list; Detail is the call in full
// (a model call's request as sent and its answer, a tool call's arguments
// and output, the retries), as its writer encoded and capped it.
type CallRecord struct {
	ID       string
	OwnerID  string
	ThreadID string
	RunID    string
	// CheckpointID and Step are those of the checkpoint written after the
	// call.
	CheckpointID string
	Step         int
	Kind         string
	Agent        string
	// Sub is set for a call of an agent-tool sub-run.
	Sub bool
	// Model is the model spec of a model call.
	Model string
	// Name is the tool's name, or a transfer's target agent; CallID the
	// tool call's id, or the transfer's.
	Name, CallID string
	// Error is the error that ended the call, "" when it succeeded.
	Error        string
	FinishReason string
	// RequestID is the provider's request id of a model call.
	RequestID string
	StartedAt time.Time
	// FirstToken is the time to a model call's first token; Latency the
	// call's duration, retries included.
	FirstToken time.Duration
	Latency    time.Duration
	Usage      message.Usage
	// Truncated is set when Detail was cut to the writer's cap.
	Truncated bool
	// Detail is a JSON object; [Ops.ListCallRecords] leaves it empty.
	Detail    json.RawMessage
	CreatedAt time.Time
}

// RecordCallsParams are the params of [Ops.RecordCalls].
type RecordCallsParams struct {
	OwnerID string
	// Calls are written as given, but for ID (a new UUIDv7 when empty)
	// and OwnerID (params' OwnerID). A ThreadID, when set, must name a
	// thread of the owner.
	Calls []*CallRecord
	// Deferred is as in [SaveCheckpointParams]: in a Store.Tx, the insert
	// may go with the transaction's next statement or its COMMIT.
	Deferred bool
}

// ListCallRecordsParams are the params of [Ops.ListCallRecords].
type ListCallRecordsParams struct {
	OwnerID string
	RunID   string
	// Limit caps the number of records; 0 means 1000.
	Limit int
}

// GetCallRecordParams are the params of [Ops.GetCallRecord].
type GetCallRecordParams struct {
	OwnerID string
	ID      string
}

// SweepCallRecordsParams are the params of [Store.SweepCallRecords].
type SweepCallRecordsParams struct {
	// Before: records created before it are deleted. Required.
	Before time.Time
	// Limit is how many records one batch deletes, each batch in a
	// transaction of its own. Defaults to [DefaultPruneLimit].
	Limit int
}
