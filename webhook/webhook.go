package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/store"
)

// Defaults of [Config].
const (
	DefaultTimeout     = 10 * time.Second
	DefaultMaxAttempts = 10
)

// SecretPrefix starts a secret in the Standard Webhooks format:
// whsec_<base64 of the key>.
const SecretPrefix = "whsec_"

// Config configures [New]. A zero Config (no URLs, no secret) means no
// webhooks: New returns nil.
type Config struct {
	// URLs take every run's events (`baton serve --webhook URL`).
	URLs []string
	// Secret signs every delivery: whsec_ and the base64 of the key
	// (Standard Webhooks). Required when webhooks are on.
	Secret string
	// Allow names the hosts and networks (CIDRs or addresses) that may be
	// called although they resolve to a loopback, private or link-local
	// address; every other such URL is refused.
	Allow []string
	// Timeout bounds one delivery attempt. Defaults to DefaultTimeout.
	Timeout time.Duration
	// MaxAttempts is how often an event is tried before River discards
	// it. Defaults to DefaultMaxAttempts.
	MaxAttempts int
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
	// Log, if set, records every delivery attempt (the delivery log,
	// GET /v1/webhooks/deliveries): package service gives its store.
	Log DeliveryLog
}

// DeliveryLog records delivery attempts: a store.Store.
type DeliveryLog interface {
	AppendWebhookDelivery(ctx context.Context, p *store.AppendWebhookDeliveryParams) (*store.WebhookDelivery, error)
}

// Service signs and delivers webhooks. Its methods are safe for
// concurrent use; a nil *Service delivers nothing.
type Service struct {
	cfg    Config
	key    []byte
	guard  *guard
	client *http.Client
	log    *slog.Logger
	// envs names, by URL, the environment variable holding the URL's own
	// secret ([Service.SetSecretEnv]); other URLs are signed with
	// Config.Secret.
	envs map[string]string
	// targets, if set, adds a run's own targets ([Service.SetTargets]).
	targets TargetsFunc
}

// ErrConfig is the error of a webhook configuration that cannot work: URLs
// without a secret, a malformed secret, a bad allow entry. Commands answer
// it as a usage error.
var ErrConfig = errors.New("webhook: configuration")

// New returns the webhook service of cfg, or nil when cfg names no URL
// and no secret (webhooks off). URLs and a secret without the other, a
// bad secret, a bad allow entry or a refused URL are errors.
func New(ctx context.Context, cfg Config) (*Service, error) {
	if len(cfg.URLs) == 0 && cfg.Secret == "" {
		return nil, nil
	}
	if cfg.Secret == "" {
		return nil, fmt.Errorf("%w: a secret is required (--webhook-secret or BATON_WEBHOOK_SECRET: whsec_<base64>)", ErrConfig)
	}
	key, err := parseSecret(cfg.Secret)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout < 0 || cfg.MaxAttempts < 0 {
		return nil, errors.New("webhook: Config has a negative timeout or attempt count")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	g, err := newGuard(cfg.Allow)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, key: key, guard: g, log: cfg.Logger}
	for _, u := range cfg.URLs {
		if _, err := g.parse(ctx, u); err != nil {
			return nil, err
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // a proxy would dial for us, past the guard
	tr.DialContext = g.dialer(&net.Dialer{Timeout: cfg.Timeout})
	s.client = &http.Client{Transport: tr, Timeout: cfg.Timeout,
		// A redirect could lead anywhere; the guard checks it too, but a
		// webhook's answer is its status.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return s, nil
}

// SetSecretEnv makes deliveries to url signed with the secret in the
// environment variable env (a network file's secret_env) instead of
// Config.Secret; the variable must hold a whsec_ secret now, and whichever
// process delivers reads it at each attempt. Call it before the service
// is used; a URL given two different variables is an error.
func (s *Service) SetSecretEnv(url, env string) error {
	if s == nil {
		return errors.New("webhook: webhooks are not configured on this server (--webhook-secret)")
	}
	if _, err := parseSecret(os.Getenv(env)); err != nil {
		return fmt.Errorf("webhook: %s: %w", env, err)
	}
	if old, ok := s.envs[url]; ok && old != env {
		return fmt.Errorf("webhook: %s is given the secrets of both %s and %s", url, old, env)
	}
	if s.envs == nil {
		s.envs = map[string]string{}
	}
	s.envs[url] = env
	return nil
}

// keyOf returns the signing key of a delivery: its endpoint's own
// ([Args].Endpoint), its URL's variable's ([Args].SecretEnv), else the
// service's secret.
func (s *Service) keyOf(a *Args) ([]byte, error) {
	if a.Endpoint {
		return s.endpointKey(a.OwnerID, a.URL), nil
	}
	env := a.SecretEnv
	if env == "" {
		return s.key, nil
	}
	key, err := parseSecret(os.Getenv(env))
	if err != nil {
		return nil, fmt.Errorf("webhook: %s: %w", env, err)
	}
	return key, nil
}

// EndpointSecret returns the secret that signs the deliveries to url of
// the endpoints owner names itself (a run's webhook, an A2A push
// notification config): whsec_ and the base64 of HMAC-SHA256, under the
// server's key, of owner and url (the URL exactly as the run names it).
// Each owner's endpoints have their own secret, which the owner may learn
// (POST /v1/webhooks/secret) without learning the server's or another's.
func (s *Service) EndpointSecret(owner, url string) (string, error) {
	if s == nil {
		return "", errors.New("webhook: webhooks are not configured on this server (--webhook-secret)")
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(s.endpointKey(owner, url)), nil
}

// endpointKey is the key of [Service.EndpointSecret].
func (s *Service) endpointKey(owner, url string) []byte {
	m := hmac.New(sha256.New, s.key)
	// Lengths first, so that no two (owner, url) pairs give one message.
	m.Write([]byte("baton-webhook-endpoint-v1\x00" + strconv.Itoa(len(owner)) + ":" + owner + strconv.Itoa(len(url)) + ":" + url))
	return m.Sum(nil)
}

// CheckURL checks a webhook URL named by a request: its form and the
// addresses its host resolves to now. A refusal wraps [ErrRefused].
func (s *Service) CheckURL(ctx context.Context, raw string) error {
	if s == nil {
		return errors.New("webhook: webhooks are not configured on this server (--webhook-secret)")
	}
	_, err := s.guard.parse(ctx, raw)
	return err
}

func parseSecret(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: the secret must start with %s", ErrConfig, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) < 16 {
		return nil, fmt.Errorf("%w: the secret must be %s and the base64 of at least 16 bytes", ErrConfig, SecretPrefix)
	}
	return key, nil
}

// Sign returns the webhook-signature header of a message: v1, and the
// base64 of HMAC-SHA256(key, id.timestamp.body) (Standard Webhooks).
func Sign(key []byte, id string, ts time.Time, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(ts.Unix(), 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// post delivers body to url once, signed; a non-2xx answer is an error.
func (s *Service) post(ctx context.Context, url, id string, body []byte) error {
	_, err := s.send(ctx, s.key, url, id, body, nil)
	return err
}

// send is post that also returns the receiver's status (0: none); headers
// are added to the request's (a [Target]'s).
func (s *Service) send(ctx context.Context, key []byte, url, id string, body []byte, headers map[string]string) (int, error) {
	now := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		return 0, fmt.Errorf("webhook: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "baton-webhooks")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", Sign(key, id, now, body))
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("webhook: deliver %s: %w", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, &StatusError{ID: id, Status: resp.StatusCode}
	}
	return resp.StatusCode, nil
}

// StatusError is a delivery the receiver answered with a status other
// than 2xx.
type StatusError struct {
	ID     string
	Status int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("webhook: delivery %s answered %d", e.ID, e.Status)
}
