package server

import (
	"context"

	"github.com/batonhq/baton/store"
)

// PushNotifications reports whether the server sends A2A push
// notifications: its webhooks are on.
func (s *Server) PushNotifications() bool { return s.cfg.Service.Webhooks() != nil }

// PutPushConfig stores an A2A push notification config of a run of the
// caller.
func (s *Server) PutPushConfig(ctx context.Context, c *Caller, param string, cfg store.PushConfig) (*store.PushConfig, error) {
	if err := c.Require(ScopeRun); err != nil {
		return nil, err
	}
	if err := s.cfg.Service.Webhooks().CheckURL(ctx, cfg.URL); err != nil {
		return nil, BadParam(param, "%v", err)
	}
	cfg.OwnerID = c.Owner
	return s.st.PutPushConfig(ctx, &store.PutPushConfigParams{Config: cfg})
}

// PushConfigs returns the A2A push notification configs of a run of the
// caller.
func (s *Server) PushConfigs(ctx context.Context, c *Caller, runID string) ([]*store.PushConfig, error) {
	return s.st.ListPushConfigs(ctx, &store.PushConfigKeyParams{OwnerID: c.Owner, RunID: runID})
}

// PushConfig returns an A2A push notification config of a run of the
// caller.
func (s *Server) PushConfig(ctx context.Context, c *Caller, runID, id string) (*store.PushConfig, error) {
	return s.st.GetPushConfig(ctx, &store.PushConfigKeyParams{OwnerID: c.Owner, RunID: runID, ID: id})
}

// DeletePushConfig deletes an A2A push notification config of a run of
// the caller.
func (s *Server) DeletePushConfig(ctx context.Context, c *Caller, runID, id string) error {
	if err := c.Require(ScopeRun); err != nil {
		return err
	}
	return s.st.DeletePushConfig(ctx, &store.PushConfigKeyParams{OwnerID: c.Owner, RunID: runID, ID: id})
}
