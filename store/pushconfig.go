package store

import "time"

// PushConfig is an A2A push notification config: where to send the updates
// of a task (a run) of its owner, and how to authenticate to the receiver.
// The config outlives the run's end and is deleted with its thread; a run's
// configs are owner-scoped.
type PushConfig struct {
	OwnerID string
	// RunID is the task's id, ID the config's (unique per task).
	RunID    string
	ID       string
	ThreadID string
	Network  string
	URL      string
	// Token, when set, goes in the X-A2A-Notification-Token header.
	Token string
	// AuthScheme and AuthCredentials, when set, make the Authorization
	// header ("Bearer <credentials>").
	AuthScheme      string
	AuthCredentials string
	// Protocol is the A2A protocol version of the payload ("0.3", "1.0").
	Protocol  string
	CreatedAt time.Time
}

// PutPushConfigParams are the params of [Ops.PutPushConfig]: the config,
// which replaces the task's config of the same ID. OwnerID, RunID, ID,
// ThreadID, URL and Protocol are required; a thread that does not exist
// is [ErrNotFound].
type PutPushConfigParams struct {
	Config PushConfig
}

// PushConfigKeyParams name one config of a task ([Ops.GetPushConfig],
// [Ops.DeletePushConfig]); ListPushConfigs needs no ID.
type PushConfigKeyParams struct {
	OwnerID string
	RunID   string
	ID      string
}
