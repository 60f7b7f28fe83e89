// Package a2apush sends A2A push notifications through package webhook:
// a task's (a run's) push notification configs, stored by server/a2a
// (store.PushConfig), become [webhook.Target]s of the run's events, so
// that each notification is a durable job inserted in the transaction of
// the checkpoint that caused it, retried, logged and checked against the
// allow list like every webhook. The body is the task as the config's
// protocol has it: protocol 0.3's Task, protocol 1.0's StreamResponse
// holding the task; the config's token goes in X-A2A-Notification-Token
// and its authentication in Authorization, besides the Standard Webhooks
// signature.
package a2apush

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/batonhq/baton/internal/a2av1"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/webhook"
)

// Protocol versions of a config: the payload's shape.
const (
	Protocol03 = "0.3"
	Protocol10 = a2av1.Version
)

// TokenHeader carries a config's token.
const TokenHeader = "X-A2A-Notification-Token"

// AnswerArtifact is the id of the artifact that holds a task's answer.
const AnswerArtifact a2a.ArtifactID = "answer"

// TaskState is the A2A state of a run's status.
func TaskState(st runstate.Status) a2a.TaskState {
	switch st {
	case runstate.StatusCompleted:
		return a2a.TaskStateCompleted
	case runstate.StatusFailed:
		return a2a.TaskStateFailed
	case runstate.StatusCancelled:
		return a2a.TaskStateCanceled
	case runstate.StatusInterrupted:
		return a2a.TaskStateInputRequired
	}
	return a2a.TaskStateWorking
}

// ActionNames names the tool calls an interrupt waits on.
func ActionNames(in *runstate.Interrupt) string {
	var names []string
	for _, ar := range in.ActionRequests {
		names = append(names, ar.Name)
	}
	return strings.Join(names, ", ")
}

// WaitingText is the text of the status message of a task that waits for
// a decision on in.
func WaitingText(in *runstate.Interrupt) string {
	return "Waiting for a decision on " + ActionNames(in) + " (interrupt " + in.ID +
		`): answer this task with "approve" or "reject", or a data part {"type": "approve"|"reject"|"edit", "args": {...}}.`
}

// Task is the A2A task of a run's state at the end of the run or its
// stop for a decision: its state, the status message (the answer, the
// failure or what it waits for) and the answer as the artifact.
func Task(st *runstate.State) *a2a.Task {
	info := a2a.TaskInfo{TaskID: a2a.TaskID(st.RunID), ContextID: st.ThreadID}
	msg := func(text string) *a2a.Message {
		m := &a2a.Message{ID: a2a.NewMessageID(), Role: a2a.MessageRoleAgent, TaskID: info.TaskID, ContextID: info.ContextID, Parts: a2a.ContentParts{a2a.TextPart{Text: text}}}
		if st.Agent != "" {
			m.Metadata = map[string]any{"baton": map[string]any{"agent": st.Agent}}
		}
		return m
	}
	now := time.Now().UTC()
	t := &a2a.Task{ID: info.TaskID, ContextID: info.ContextID, Status: a2a.TaskStatus{State: TaskState(st.Status), Timestamp: &now},
		History: []*a2a.Message{}, Metadata: map[string]any{"baton": map[string]any{"run_id": st.RunID, "thread_id": st.ThreadID, "network": st.Network}}}
	switch st.Status {
	case runstate.StatusCompleted, runstate.StatusCancelled:
		if st.FinalOutput != "" {
			t.Status.Message = msg(st.FinalOutput)
		}
	case runstate.StatusFailed:
		why := "the run failed"
		if st.Failure != nil && st.Failure.Message != "" {
			why = st.Failure.Message
		}
		t.Status.Message = msg(why)
	case runstate.StatusInterrupted:
		if st.Interrupt != nil {
			t.Status.Message = msg(WaitingText(st.Interrupt))
			t.Status.Message.Metadata = map[string]any{"baton": map[string]any{"interrupt": st.Interrupt}}
		}
	}
	if st.FinalOutput != "" {
		t.Artifacts = []*a2a.Artifact{{ID: AnswerArtifact, Name: "answer", Parts: a2a.ContentParts{a2a.TextPart{Text: st.FinalOutput}}}}
	}
	return t
}

// Payload returns the body and headers of a notification of task t to
// config c.
func Payload(c *store.PushConfig, t *a2a.Task) (json.RawMessage, map[string]string, error) {
	h := map[string]string{}
	var body any = t
	switch c.Protocol {
	case Protocol03:
		h["Content-Type"] = "application/json"
	case Protocol10:
		h["Content-Type"] = "application/a2a+json"
		body = a2av1.StreamResponse{Task: a2av1.ToTask(t)}
	default:
		return nil, nil, fmt.Errorf("a2apush: config %s of task %s has protocol %q", c.ID, c.RunID, c.Protocol)
	}
	if c.Token != "" {
		h[TokenHeader] = c.Token
	}
	if c.AuthScheme != "" && c.AuthCredentials != "" {
		h["Authorization"] = c.AuthScheme + " " + c.AuthCredentials
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, nil, fmt.Errorf("a2apush: %w", err)
	}
	return b, h, nil
}

// Targets is the [webhook.TargetsFunc] of the push notification configs
// of a run, read in the checkpoint's transaction.
func Targets(ctx context.Context, tx store.Tx, owner string, st *runstate.State) ([]webhook.Target, error) {
	cs, err := tx.ListPushConfigs(ctx, &store.PushConfigKeyParams{OwnerID: owner, RunID: st.RunID})
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	t := Task(st)
	out := make([]webhook.Target, 0, len(cs))
	for _, c := range cs {
		body, h, err := Payload(c, t)
		if err != nil {
			return nil, err
		}
		out = append(out, webhook.Target{URL: c.URL, Key: c.ID, Headers: h, Payload: body})
	}
	return out, nil
}

// From03 is the stored config of a protocol 0.3 config of task taskID; an
// empty id is the task's id. Of its authentication schemes, Bearer is
// kept if named, else the first.
func From03(taskID string, pc *a2a.PushConfig) store.PushConfig {
	c := store.PushConfig{RunID: taskID, ID: pc.ID, URL: pc.URL, Token: pc.Token, Protocol: Protocol03}
	if a := pc.Auth; a != nil && len(a.Schemes) > 0 {
		c.AuthScheme = a.Schemes[0]
		for _, s := range a.Schemes {
			if strings.EqualFold(s, "Bearer") {
				c.AuthScheme = s
			}
		}
		c.AuthCredentials = a.Credentials
	}
	if c.ID == "" {
		c.ID = taskID
	}
	return c
}

// To03 is a stored config as protocol 0.3 has it.
func To03(c *store.PushConfig) *a2a.TaskPushConfig {
	out := &a2a.TaskPushConfig{TaskID: a2a.TaskID(c.RunID), Config: a2a.PushConfig{ID: c.ID, URL: c.URL, Token: c.Token}}
	if c.AuthScheme != "" {
		out.Config.Auth = &a2a.PushAuthInfo{Schemes: []string{c.AuthScheme}, Credentials: c.AuthCredentials}
	}
	return out
}

// From10 is the stored config of a protocol 1.0 config of task taskID; an
// empty id is the task's id.
func From10(taskID string, pc *a2av1.PushConfig) store.PushConfig {
	c := store.PushConfig{RunID: taskID, ID: pc.ID, URL: pc.URL, Token: pc.Token, Protocol: Protocol10}
	if a := pc.Authentication; a != nil {
		c.AuthScheme, c.AuthCredentials = a.Scheme, a.Credentials
	}
	if c.ID == "" {
		c.ID = taskID
	}
	return c
}

// To10 is a stored config as protocol 1.0 has it.
func To10(c *store.PushConfig) a2av1.PushConfig {
	out := a2av1.PushConfig{ID: c.ID, TaskID: c.RunID, URL: c.URL, Token: c.Token}
	if c.AuthScheme != "" {
		out.Authentication = &a2av1.AuthInfo{Scheme: c.AuthScheme, Credentials: c.AuthCredentials}
	}
	return out
}
