// Package a2av1 is the JSON-RPC wire of A2A protocol 1.0 over the types of
// a2a-go (github.com/a2aproject/a2a-go/a2a), which speaks 0.3: the 1.0
// method names, messages, parts, tasks and stream responses, converted
// both ways, so that baton's A2A server (server/a2a) answers 1.0 clients
// with the handler that answers 0.3 ones, and its remote agents
// (a2aremote) call 1.0 agents with the code that calls 0.3 ones
// ([Transport]). The shapes follow the protocol's JSON (proto3 JSON
// names, enums as TASK_STATE_…, ROLE_…).
package a2av1

import (
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
)

// Version is the protocol version of this wire.
const Version = "1.0"

// The JSON-RPC methods of protocol 1.0 and the 0.3 methods they replace.
var Methods = map[string]string{
	"SendMessage":                      "message/send",
	"SendStreamingMessage":             "message/stream",
	"GetTask":                          "tasks/get",
	"CancelTask":                       "tasks/cancel",
	"SubscribeToTask":                  "tasks/resubscribe",
	"CreateTaskPushNotificationConfig": "tasks/pushNotificationConfig/set",
	"GetTaskPushNotificationConfig":    "tasks/pushNotificationConfig/get",
	"ListTaskPushNotificationConfigs":  "tasks/pushNotificationConfig/list",
	"DeleteTaskPushNotificationConfig": "tasks/pushNotificationConfig/delete",
	"GetExtendedAgentCard":             "agent/getAuthenticatedExtendedCard",
}

// Interface is an entry of a 1.0 agent card's supportedInterfaces.
type Interface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	Tenant          string `json:"tenant,omitempty"`
}

// Part is a part of a message or artifact: text, data, a file by URL or
// raw bytes (base64).
type Part struct {
	Text      *string        `json:"text,omitempty"`
	Data      any            `json:"data,omitempty"`
	URL       string         `json:"url,omitempty"`
	Raw       string         `json:"raw,omitempty"`
	Filename  string         `json:"filename,omitempty"`
	MediaType string         `json:"mediaType,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// Message is a 1.0 message.
type Message struct {
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             string         `json:"role"`
	Parts            []Part         `json:"parts"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

// TaskStatus is a task's state.
type TaskStatus struct {
	State     string   `json:"state"`
	Message   *Message `json:"message,omitempty"`
	Timestamp string   `json:"timestamp,omitempty"`
}

// Artifact is a task's output.
type Artifact struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Parts       []Part         `json:"parts"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	Extensions  []string       `json:"extensions,omitempty"`
}

// Task is a 1.0 task.
type Task struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Artifacts []Artifact     `json:"artifacts,omitempty"`
	History   []Message      `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// StatusUpdate is a stream's task status update (1.0 has no final flag:
// a stream ends after a terminal or interrupted state).
type StatusUpdate struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// ArtifactUpdate is a stream's artifact update.
type ArtifactUpdate struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Artifact  Artifact       `json:"artifact"`
	Append    bool           `json:"append,omitempty"`
	LastChunk bool           `json:"lastChunk,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// StreamResponse is one of a SendMessage result (task or message) or a
// stream's event.
type StreamResponse struct {
	Task           *Task           `json:"task,omitempty"`
	Message        *Message        `json:"message,omitempty"`
	StatusUpdate   *StatusUpdate   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *ArtifactUpdate `json:"artifactUpdate,omitempty"`
}

// SendConfig is a SendMessage request's configuration.
type SendConfig struct {
	AcceptedOutputModes []string `json:"acceptedOutputModes,omitempty"`
	HistoryLength       *int     `json:"historyLength,omitempty"`
	ReturnImmediately   bool     `json:"returnImmediately,omitempty"`
	// PushConfig is a push notification config of the task the message
	// starts or continues.
	PushConfig *PushConfig `json:"taskPushNotificationConfig,omitempty"`
}

// SendParams are the params of SendMessage and SendStreamingMessage.
type SendParams struct {
	Tenant        string         `json:"tenant,omitempty"`
	Message       *Message       `json:"message"`
	Configuration *SendConfig    `json:"configuration,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
}

// TaskParams are the params of GetTask, CancelTask and SubscribeToTask.
type TaskParams struct {
	Tenant        string         `json:"tenant,omitempty"`
	ID            string         `json:"id"`
	HistoryLength *int           `json:"historyLength,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
}

var errWire = errors.New("a2av1: bad message")

var states = map[a2a.TaskState]string{
	a2a.TaskStateSubmitted: "TASK_STATE_SUBMITTED", a2a.TaskStateWorking: "TASK_STATE_WORKING",
	a2a.TaskStateCompleted: "TASK_STATE_COMPLETED", a2a.TaskStateFailed: "TASK_STATE_FAILED",
	a2a.TaskStateCanceled: "TASK_STATE_CANCELED", a2a.TaskStateInputRequired: "TASK_STATE_INPUT_REQUIRED",
	a2a.TaskStateRejected: "TASK_STATE_REJECTED", a2a.TaskStateAuthRequired: "TASK_STATE_AUTH_REQUIRED",
}

// State is the 1.0 name of a state.
func State(s a2a.TaskState) string {
	if v, ok := states[s]; ok {
		return v
	}
	return "TASK_STATE_UNSPECIFIED"
}

// FromState is the state of a 1.0 name.
func FromState(s string) a2a.TaskState {
	for k, v := range states {
		if v == s {
			return k
		}
	}
	return a2a.TaskStateUnknown
}

// FromMessage converts a 1.0 message; a part that is none of text, data,
// url or raw, or a role that is neither user nor agent, is an error.
func FromMessage(m *Message) (*a2a.Message, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: message is required", errWire)
	}
	out := &a2a.Message{ID: m.MessageID, ContextID: m.ContextID, TaskID: a2a.TaskID(m.TaskID), Metadata: m.Metadata, Extensions: m.Extensions}
	switch m.Role {
	case "ROLE_USER", "user":
		out.Role = a2a.MessageRoleUser
	case "ROLE_AGENT", "agent":
		out.Role = a2a.MessageRoleAgent
	default:
		return nil, fmt.Errorf("%w: role %q: want ROLE_USER or ROLE_AGENT", errWire, m.Role)
	}
	for _, id := range m.ReferenceTaskIDs {
		out.ReferenceTasks = append(out.ReferenceTasks, a2a.TaskID(id))
	}
	parts, err := fromParts(m.Parts)
	if err != nil {
		return nil, err
	}
	out.Parts = parts
	return out, nil
}

func fromParts(ps []Part) (a2a.ContentParts, error) {
	out := a2a.ContentParts{}
	for i, p := range ps {
		meta := a2a.FileMeta{MimeType: p.MediaType, Name: p.Filename}
		switch {
		case p.Text != nil:
			out = append(out, a2a.TextPart{Text: *p.Text, Metadata: p.Metadata})
		case p.Data != nil:
			d, ok := p.Data.(map[string]any)
			if !ok {
				d = map[string]any{"value": p.Data}
			}
			out = append(out, a2a.DataPart{Data: d, Metadata: p.Metadata})
		case p.URL != "":
			out = append(out, a2a.FilePart{File: a2a.FileURI{FileMeta: meta, URI: p.URL}, Metadata: p.Metadata})
		case p.Raw != "":
			if _, err := base64.StdEncoding.DecodeString(p.Raw); err != nil {
				return nil, fmt.Errorf("%w: parts[%d].raw is not base64", errWire, i)
			}
			out = append(out, a2a.FilePart{File: a2a.FileBytes{FileMeta: meta, Bytes: p.Raw}, Metadata: p.Metadata})
		default:
			return nil, fmt.Errorf("%w: parts[%d] has no text, data, url or raw", errWire, i)
		}
	}
	return out, nil
}

// ToMessage converts a message to 1.0.
func ToMessage(m *a2a.Message) *Message {
	if m == nil {
		return nil
	}
	role := "ROLE_AGENT"
	if m.Role == a2a.MessageRoleUser {
		role = "ROLE_USER"
	}
	out := &Message{MessageID: m.ID, ContextID: m.ContextID, TaskID: string(m.TaskID), Role: role, Parts: toParts(m.Parts), Metadata: m.Metadata, Extensions: m.Extensions}
	for _, id := range m.ReferenceTasks {
		out.ReferenceTaskIDs = append(out.ReferenceTaskIDs, string(id))
	}
	return out
}

func toParts(ps a2a.ContentParts) []Part {
	out := []Part{}
	for _, p := range ps {
		switch p := p.(type) {
		case a2a.TextPart:
			t := p.Text
			out = append(out, Part{Text: &t, Metadata: p.Metadata})
		case *a2a.TextPart:
			t := p.Text
			out = append(out, Part{Text: &t, Metadata: p.Metadata})
		case a2a.DataPart:
			out = append(out, Part{Data: p.Data, Metadata: p.Metadata})
		case *a2a.DataPart:
			out = append(out, Part{Data: p.Data, Metadata: p.Metadata})
		case a2a.FilePart:
			out = append(out, filePart(p))
		case *a2a.FilePart:
			out = append(out, filePart(*p))
		}
	}
	return out
}

func filePart(p a2a.FilePart) Part {
	switch f := p.File.(type) {
	case a2a.FileURI:
		return Part{URL: f.URI, Filename: f.Name, MediaType: f.MimeType, Metadata: p.Metadata}
	case a2a.FileBytes:
		return Part{Raw: f.Bytes, Filename: f.Name, MediaType: f.MimeType, Metadata: p.Metadata}
	}
	return Part{Metadata: p.Metadata}
}

func toStatus(s a2a.TaskStatus) TaskStatus {
	out := TaskStatus{State: State(s.State), Message: ToMessage(s.Message)}
	if s.Timestamp != nil {
		out.Timestamp = s.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	return out
}

func fromStatus(s TaskStatus) (a2a.TaskStatus, error) {
	out := a2a.TaskStatus{State: FromState(s.State)}
	if s.Message != nil {
		m, err := FromMessage(s.Message)
		if err != nil {
			return out, err
		}
		out.Message = m
	}
	if s.Timestamp != "" {
		if t, err := time.Parse(time.RFC3339Nano, s.Timestamp); err == nil {
			out.Timestamp = &t
		}
	}
	return out, nil
}

func toArtifact(a *a2a.Artifact) Artifact {
	return Artifact{ArtifactID: string(a.ID), Name: a.Name, Description: a.Description, Parts: toParts(a.Parts), Metadata: a.Metadata, Extensions: a.Extensions}
}

func fromArtifact(a Artifact) (*a2a.Artifact, error) {
	parts, err := fromParts(a.Parts)
	if err != nil {
		return nil, err
	}
	return &a2a.Artifact{ID: a2a.ArtifactID(a.ArtifactID), Name: a.Name, Description: a.Description, Parts: parts, Metadata: a.Metadata, Extensions: a.Extensions}, nil
}

// ToTask converts a task to 1.0.
func ToTask(t *a2a.Task) *Task {
	out := &Task{ID: string(t.ID), ContextID: t.ContextID, Status: toStatus(t.Status), Metadata: t.Metadata}
	for _, a := range t.Artifacts {
		out.Artifacts = append(out.Artifacts, toArtifact(a))
	}
	for _, m := range t.History {
		out.History = append(out.History, *ToMessage(m))
	}
	return out
}

// FromTask converts a 1.0 task.
func FromTask(t *Task) (*a2a.Task, error) {
	st, err := fromStatus(t.Status)
	if err != nil {
		return nil, err
	}
	out := &a2a.Task{ID: a2a.TaskID(t.ID), ContextID: t.ContextID, Status: st, Metadata: t.Metadata}
	for _, a := range t.Artifacts {
		x, err := fromArtifact(a)
		if err != nil {
			return nil, err
		}
		out.Artifacts = append(out.Artifacts, x)
	}
	for i := range t.History {
		m, err := FromMessage(&t.History[i])
		if err != nil {
			return nil, err
		}
		out.History = append(out.History, m)
	}
	return out, nil
}

// ToResponse converts a result or an event to 1.0.
func ToResponse(ev a2a.Event) (*StreamResponse, error) {
	switch e := ev.(type) {
	case *a2a.Task:
		return &StreamResponse{Task: ToTask(e)}, nil
	case *a2a.Message:
		return &StreamResponse{Message: ToMessage(e)}, nil
	case *a2a.TaskStatusUpdateEvent:
		return &StreamResponse{StatusUpdate: &StatusUpdate{TaskID: string(e.TaskID), ContextID: e.ContextID, Status: toStatus(e.Status), Metadata: e.Metadata}}, nil
	case *a2a.TaskArtifactUpdateEvent:
		u := &ArtifactUpdate{TaskID: string(e.TaskID), ContextID: e.ContextID, Append: e.Append, LastChunk: e.LastChunk, Metadata: e.Metadata}
		if e.Artifact != nil {
			u.Artifact = toArtifact(e.Artifact)
		}
		return &StreamResponse{ArtifactUpdate: u}, nil
	}
	return nil, fmt.Errorf("a2av1: event %T", ev)
}

// FromResponse converts a 1.0 result or stream event. A status update of
// a terminal or interrupted state is final, as 0.3 says explicitly.
func FromResponse(r *StreamResponse) (a2a.Event, error) {
	switch {
	case r.Task != nil:
		return FromTask(r.Task)
	case r.Message != nil:
		return FromMessage(r.Message)
	case r.StatusUpdate != nil:
		u := r.StatusUpdate
		st, err := fromStatus(u.Status)
		if err != nil {
			return nil, err
		}
		return &a2a.TaskStatusUpdateEvent{TaskID: a2a.TaskID(u.TaskID), ContextID: u.ContextID, Status: st, Metadata: u.Metadata, Final: st.State.Terminal() || st.State == a2a.TaskStateInputRequired || st.State == a2a.TaskStateAuthRequired}, nil
	case r.ArtifactUpdate != nil:
		u := r.ArtifactUpdate
		art, err := fromArtifact(u.Artifact)
		if err != nil {
			return nil, err
		}
		return &a2a.TaskArtifactUpdateEvent{TaskID: a2a.TaskID(u.TaskID), ContextID: u.ContextID, Artifact: art, Append: u.Append, LastChunk: u.LastChunk, Metadata: u.Metadata}, nil
	}
	return nil, fmt.Errorf("%w: a response with no task, message, statusUpdate or artifactUpdate", errWire)
}

// FromSend converts 1.0 SendMessage params.
func FromSend(p *SendParams) (*a2a.MessageSendParams, error) {
	m, err := FromMessage(p.Message)
	if err != nil {
		return nil, err
	}
	out := &a2a.MessageSendParams{Message: m, Metadata: p.Metadata}
	if c := p.Configuration; c != nil {
		blocking := !c.ReturnImmediately
		out.Config = &a2a.MessageSendConfig{AcceptedOutputModes: c.AcceptedOutputModes, HistoryLength: c.HistoryLength, Blocking: &blocking}
		if pc := c.PushConfig; pc != nil {
			out.Config.PushConfig = &FromPushConfig(pc).Config
		}
	}
	return out, nil
}

// ToSend converts SendMessage params to 1.0.
func ToSend(p *a2a.MessageSendParams) *SendParams {
	out := &SendParams{Message: ToMessage(p.Message), Metadata: p.Metadata}
	if c := p.Config; c != nil {
		out.Configuration = &SendConfig{AcceptedOutputModes: c.AcceptedOutputModes, HistoryLength: c.HistoryLength, ReturnImmediately: c.Blocking != nil && !*c.Blocking}
		if c.PushConfig != nil {
			pc := ToPushConfig(c.PushConfig)
			out.Configuration.PushConfig = &pc
		}
	}
	return out
}

// PushConfig is a 1.0 TaskPushNotificationConfig: the params of
// CreateTaskPushNotificationConfig, the result of it and of
// GetTaskPushNotificationConfig, and SendMessageConfiguration's
// taskPushNotificationConfig (without a task id).
type PushConfig struct {
	Tenant         string    `json:"tenant,omitempty"`
	ID             string    `json:"id,omitempty"`
	TaskID         string    `json:"taskId,omitempty"`
	URL            string    `json:"url"`
	Token          string    `json:"token,omitempty"`
	Authentication *AuthInfo `json:"authentication,omitempty"`
}

// AuthInfo is how a push notification authenticates to its receiver: an
// HTTP authentication scheme (Bearer …) and its credentials.
type AuthInfo struct {
	Scheme      string `json:"scheme"`
	Credentials string `json:"credentials,omitempty"`
}

// PushConfigParams are the params of GetTaskPushNotificationConfig,
// DeleteTaskPushNotificationConfig and ListTaskPushNotificationConfigs
// (ID unused; PageSize and PageToken, list's, are accepted and a list is
// one page).
type PushConfigParams struct {
	Tenant    string `json:"tenant,omitempty"`
	TaskID    string `json:"taskId"`
	ID        string `json:"id,omitempty"`
	PageSize  int    `json:"pageSize,omitempty"`
	PageToken string `json:"pageToken,omitempty"`
}

// PushConfigList is the result of ListTaskPushNotificationConfigs: a page
// of configs, and the token of the next page ("" after the last; always
// present, as A2A 1.0 has it for ListTasks).
type PushConfigList struct {
	Configs       []PushConfig `json:"configs"`
	NextPageToken string       `json:"nextPageToken"`
}

// FromPushConfig converts a 1.0 push notification config.
func FromPushConfig(p *PushConfig) *a2a.TaskPushConfig {
	out := &a2a.TaskPushConfig{TaskID: a2a.TaskID(p.TaskID), Config: a2a.PushConfig{ID: p.ID, URL: p.URL, Token: p.Token}}
	if a := p.Authentication; a != nil {
		out.Config.Auth = &a2a.PushAuthInfo{Schemes: []string{a.Scheme}, Credentials: a.Credentials}
	}
	return out
}

// ToPushConfig converts a push notification config to 1.0 (no task id):
// of its authentication schemes, the first.
func ToPushConfig(p *a2a.PushConfig) PushConfig {
	out := PushConfig{ID: p.ID, URL: p.URL, Token: p.Token}
	if a := p.Auth; a != nil && len(a.Schemes) > 0 {
		out.Authentication = &AuthInfo{Scheme: a.Schemes[0], Credentials: a.Credentials}
	}
	return out
}
