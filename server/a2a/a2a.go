package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"

	"github.com/batonhq/baton/internal/a2av1"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/webhook/a2apush"
)

// Protocol serves each network as an A2A agent over a server's core. The
// zero value is ready to mount.
type Protocol struct{}

// Mount registers the routes: the card (public) and the JSON-RPC endpoint
// of each network, and the card at /.well-known/agent-card.json when the
// server runs one network.
func (Protocol) Mount(c server.Core) {
	s := &api{c: c}
	c.Handle("GET /a2a/{network}/.well-known/agent-card.json", server.Route{Public: true}, s.a2aCard)
	// Reading a task needs the read scope; a method that starts, answers
	// or cancels one checks for more (the core's StartTurn, Resume and
	// Cancel do).
	c.Handle("POST /a2a/{network}", server.Route{Scope: server.ScopeRead, Streaming: true}, s.a2aRPC)
	if len(c.Networks()) == 1 {
		c.Handle("GET /.well-known/agent-card.json", server.Route{Public: true}, s.a2aCard)
	}
}

// api is the routes' handlers on a core.
type api struct {
	c server.Core
}

// a2aProtocolVersion is the A2A protocol version the card declares.
const a2aProtocolVersion = "0.3.0"

// answerArtifact is the id of the artifact that holds a task's answer: the
// text of every assistant message of the run, in order, separated by blank
// lines (as /v1/chat/completions answers).
const answerArtifact = a2apush.AnswerArtifact

func (s *api) a2aCard(w http.ResponseWriter, r *http.Request, _ *server.Caller) error {
	name := r.PathValue("network")
	if nets := s.c.Networks(); name == "" && len(nets) == 1 {
		name = nets[0].Name()
	}
	nw, ok := s.c.Network(name)
	if !ok {
		return server.NotFound("network", name)
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	card := s.agentCard(r, nw)
	b, err := json.Marshal(card)
	if err != nil {
		return err
	}
	// One card for both protocols: 0.3's url, preferredTransport and
	// additionalInterfaces, and 1.0's supportedInterfaces (the same
	// endpoint answers both method sets; a 1.0 client picks 1.0).
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	m["supportedInterfaces"] = []a2av1.Interface{
		{URL: card.URL, ProtocolBinding: "JSONRPC", ProtocolVersion: a2av1.Version},
		{URL: card.URL, ProtocolBinding: "JSONRPC", ProtocolVersion: a2aProtocolVersion},
	}
	server.WriteJSON(w, http.StatusOK, m)
	return nil
}

// agentCard is the A2A agent card of a network, with the URL the request
// reached the server at.
func (s *api) agentCard(r *http.Request, nw *server.Network) *a2a.AgentCard {
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	entry, _ := nw.Agents().Agent(nw.Agents().Entry())
	desc := "A baton network of agents: " + strings.Join(nw.Agents().Names(), ", ") + "."
	if entry != nil && entry.Description != "" {
		desc = entry.Description
	}
	card := &a2a.AgentCard{
		Name: nw.Name(), Description: desc, URL: scheme + "://" + r.Host + "/a2a/" + nw.Name(),
		PreferredTransport: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2aProtocolVersion, Version: nw.Agents().Fingerprint(),
		Capabilities:      a2a.AgentCapabilities{Streaming: true, PushNotifications: s.c.PushNotifications()},
		DefaultInputModes: []string{"text/plain", "application/json"}, DefaultOutputModes: []string{"text/plain"},
		Provider: &a2a.AgentProvider{Org: "baton", URL: scheme + "://" + r.Host},
		SecuritySchemes: a2a.NamedSecuritySchemes{"baton": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer",
			Description: "A baton API key (baton keys create): the key's owner is the tenant of the tasks."}},
		Security: []a2a.SecurityRequirements{{"baton": a2a.SecuritySchemeScopes{}}},
		Skills:   []a2a.AgentSkill{},
	}
	card.AdditionalInterfaces = []a2a.AgentInterface{{Transport: a2a.TransportProtocolJSONRPC, URL: card.URL}}
	for _, a := range nw.Agents().Agents() {
		card.Skills = append(card.Skills, a2a.AgentSkill{ID: a.Name, Name: a.Name, Description: a.Description, Tags: []string{"baton", nw.Name()}})
	}
	return card
}

// a2aRPC serves the A2A JSON-RPC methods of a network.
func (s *api) a2aRPC(w http.ResponseWriter, r *http.Request, c *server.Caller) error {
	nw, ok := s.c.Network(r.PathValue("network"))
	if !ok {
		return server.NotFound("network", r.PathValue("network"))
	}
	if err := c.RequireNetwork(nw.Name()); err != nil {
		return err
	}
	h := &a2aHandler{s: s, nw: nw, c: c}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if m := method1(body); m != "" {
		h.v1 = true
		h.serve1(w, r, body)
		return nil
	}
	if deleteRequest(body) {
		h.delete03(w, r, body)
		return nil
	}
	a2asrv.NewJSONRPCHandler(h).ServeHTTP(w, r)
	return nil
}

// a2aHandler is a2asrv.RequestHandler on a served network, for one caller.
type a2aHandler struct {
	s  *api
	nw *server.Network
	c  *server.Caller
	// v1 is set for a request of protocol 1.0 (its push notification
	// configs get 1.0's payload).
	v1 bool
}

var _ a2asrv.RequestHandler = (*a2aHandler)(nil)

// a2aError turns an error of the server into an A2A error, whose JSON-RPC
// data carries the message.
func a2aError(err error) error {
	if err == nil {
		return nil
	}
	for _, e := range []error{a2a.ErrInvalidParams, a2a.ErrTaskNotFound, a2a.ErrInvalidRequest, a2a.ErrUnsupportedOperation, a2a.ErrUnsupportedContentType,
		a2a.ErrPushNotificationNotSupported} {
		if errors.Is(err, e) {
			return err
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %v", a2a.ErrServerError, err)
	}
	ae := server.Classify(err)
	switch {
	case ae.Status == http.StatusNotFound:
		return fmt.Errorf("%w: %s", a2a.ErrTaskNotFound, ae.Message)
	case ae.Status == http.StatusConflict:
		return fmt.Errorf("%w: %s", a2a.ErrInvalidRequest, ae.Message)
	case ae.Status < 500:
		return fmt.Errorf("%w: %s", a2a.ErrInvalidParams, ae.Message)
	case ae.Status == http.StatusInternalServerError:
		return fmt.Errorf("%w: %s", a2a.ErrInternalError, ae.Message)
	}
	return fmt.Errorf("%w: %s", a2a.ErrServerError, ae.Message)
}
