package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/webhook/a2apush"
)

// Push notifications: a task's configs are stored (server.Core's
// PutPushConfig) and the task's events go to them as webhooks (package
// a2apush): the task once it completes, fails, is cancelled or waits for
// input. A server without webhooks answers that it has none.

// putPush stores push, if not nil, as a push notification config of task
// runID (a run on threadID), in the protocol the request speaks.
func (h *a2aHandler) putPush(ctx context.Context, runID, threadID string, push *a2a.PushConfig) error {
	if push == nil {
		return nil
	}
	if !h.s.c.PushNotifications() {
		return a2a.ErrPushNotificationNotSupported
	}
	c := a2apush.From03(runID, push)
	if h.v1 {
		c.Protocol = a2apush.Protocol10
	}
	c.ThreadID, c.Network = threadID, h.nw.Name()
	_, err := h.s.c.PutPushConfig(ctx, h.c, "pushNotificationConfig.url", c)
	return pushError(err)
}

// pushTask returns the run of a task of a push notification request,
// after checking that the server sends them.
func (h *a2aHandler) pushTask(ctx context.Context, id a2a.TaskID) (*server.Run, error) {
	if !h.s.c.PushNotifications() {
		return nil, a2a.ErrPushNotificationNotSupported
	}
	if id == "" {
		return nil, fmt.Errorf("%w: the task's id is required", a2a.ErrInvalidParams)
	}
	run, err := h.run(ctx, string(id))
	return run, a2aError(err)
}

// pushError is the A2A error of a config's store error: a missing config
// is a bad param, not a missing task.
func pushError(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: no such push notification config", a2a.ErrInvalidParams)
	}
	return a2aError(err)
}

// setPush stores a config of an existing task.
func (h *a2aHandler) setPush(ctx context.Context, c store.PushConfig) (*store.PushConfig, error) {
	run, err := h.pushTask(ctx, a2a.TaskID(c.RunID))
	if err != nil {
		return nil, err
	}
	if c.URL == "" {
		return nil, fmt.Errorf("%w: the config's url is required", a2a.ErrInvalidParams)
	}
	c.ThreadID, c.Network = run.ThreadID(), h.nw.Name()
	out, err := h.s.c.PutPushConfig(ctx, h.c, "url", c)
	return out, pushError(err)
}

// getPush returns a config of a task; id "" is its first.
func (h *a2aHandler) getPush(ctx context.Context, task a2a.TaskID, id string) (*store.PushConfig, error) {
	if _, err := h.pushTask(ctx, task); err != nil {
		return nil, err
	}
	if id != "" {
		c, err := h.s.c.PushConfig(ctx, h.c, string(task), id)
		return c, pushError(err)
	}
	cs, err := h.s.c.PushConfigs(ctx, h.c, string(task))
	if err != nil {
		return nil, pushError(err)
	}
	if len(cs) == 0 {
		return nil, pushError(store.ErrNotFound)
	}
	return cs[0], nil
}

// listPush returns the configs of a task.
func (h *a2aHandler) listPush(ctx context.Context, task a2a.TaskID) ([]*store.PushConfig, error) {
	if _, err := h.pushTask(ctx, task); err != nil {
		return nil, err
	}
	cs, err := h.s.c.PushConfigs(ctx, h.c, string(task))
	return cs, pushError(err)
}

// deletePush deletes a config of a task.
func (h *a2aHandler) deletePush(ctx context.Context, task a2a.TaskID, id string) error {
	if _, err := h.pushTask(ctx, task); err != nil {
		return err
	}
	if id == "" {
		return fmt.Errorf("%w: the config's id is required", a2a.ErrInvalidParams)
	}
	return pushError(h.s.c.DeletePushConfig(ctx, h.c, string(task), id))
}

// OnSetTaskPushConfig stores a push notification config of a task.
func (h *a2aHandler) OnSetTaskPushConfig(ctx context.Context, p *a2a.TaskPushConfig) (*a2a.TaskPushConfig, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: params are required", a2a.ErrInvalidParams)
	}
	c, err := h.setPush(ctx, a2apush.From03(string(p.TaskID), &p.Config))
	if err != nil {
		return nil, err
	}
	return a2apush.To03(c), nil
}

// OnGetTaskPushConfig returns a push notification config of a task.
func (h *a2aHandler) OnGetTaskPushConfig(ctx context.Context, p *a2a.GetTaskPushConfigParams) (*a2a.TaskPushConfig, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: params are required", a2a.ErrInvalidParams)
	}
	c, err := h.getPush(ctx, p.TaskID, p.ConfigID)
	if err != nil {
		return nil, err
	}
	return a2apush.To03(c), nil
}

// OnListTaskPushConfig lists the push notification configs of a task.
func (h *a2aHandler) OnListTaskPushConfig(ctx context.Context, p *a2a.ListTaskPushConfigParams) ([]*a2a.TaskPushConfig, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: params are required", a2a.ErrInvalidParams)
	}
	cs, err := h.listPush(ctx, p.TaskID)
	if err != nil {
		return nil, err
	}
	out := make([]*a2a.TaskPushConfig, len(cs))
	for i, c := range cs {
		out[i] = a2apush.To03(c)
	}
	return out, nil
}

// OnDeleteTaskPushConfig deletes a push notification config of a task.
func (h *a2aHandler) OnDeleteTaskPushConfig(ctx context.Context, p *a2a.DeleteTaskPushConfigParams) error {
	if p == nil {
		return fmt.Errorf("%w: params are required", a2a.ErrInvalidParams)
	}
	return h.deletePush(ctx, p.TaskID, p.ConfigID)
}

// deleteMethod is protocol 0.3's method that deletes a config.
const deleteMethod = "tasks/pushNotificationConfig/delete"

// deleteRequest reports whether body is a request of deleteMethod.
func deleteRequest(body []byte) bool {
	var req struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &req) == nil && req.Method == deleteMethod
}

// delete03 answers a request of deleteMethod, whose null result a2asrv
// (v0.3.3) does not write: the client would read no answer.
func (h *a2aHandler) delete03(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		rpcRequest
		Params *a2a.DeleteTaskPushConfigParams `json:"params"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.JSONRPC != "2.0" || req.Params == nil {
		writeRPC(w, req.ID, nil, fmt.Errorf("%w: params {\"id\", \"pushNotificationConfigId\"} are required", a2a.ErrInvalidParams))
		return
	}
	writeRPC(w, req.ID, nil, h.OnDeleteTaskPushConfig(r.Context(), req.Params))
}
