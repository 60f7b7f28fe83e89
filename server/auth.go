package server

import (
	"context"
	"errors"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/store"
)

// Caller is the authenticated client of a request: the owner of its API
// key, the tenant of everything it reads and writes, and what the key may
// do.
type Caller struct {
	Owner string
	KeyID string
	// Scopes are the key's scopes (store.ScopeRead … store.ScopeAdmin). A
	// Caller made in code (baton mcp's stdio one) gives its own; without
	// any it may do nothing.
	Scopes []Scope
	// Networks, when not empty, are the only networks whose threads the
	// key sees.
	Networks []string
	// ExpiresAt is when the key stops working; zero never.
	ExpiresAt time.Time
	// RequestID is the request's id (the X-Request-Id answered).
	RequestID string
}

// Scope is what a key may do; see store.Scope. Each scope includes the ones
// before it.
type Scope = store.Scope

// The scopes a [Route] requires.
const (
	ScopeRead   = store.ScopeRead
	ScopeRun    = store.ScopeRun
	ScopeDecide = store.ScopeDecide
	ScopeAdmin  = store.ScopeAdmin
)

// Require returns nil when the caller's key has scope need, else a 403
// [*Error] naming the scope it lacks.
func (c *Caller) Require(need Scope) error {
	if c != nil && store.ScopesInclude(c.Scopes, need) {
		return nil
	}
	var have []string
	if c != nil {
		for _, s := range c.Scopes {
			have = append(have, string(s))
		}
	}
	e := Errorf(http.StatusForbidden, wire.ErrForbidden, "this API key lacks the %s scope (it has: %s)", need, strings.Join(have, ", "))
	e.extra = &wire.ErrorExtra{Scope: string(need)}
	return e
}

// SeesNetwork reports whether the caller's key may use the network of a
// name: a key without networks sees every network.
func (c *Caller) SeesNetwork(name string) bool {
	return c == nil || len(c.Networks) == 0 || slices.Contains(c.Networks, name)
}

// RequireNetwork returns nil when the caller's key may use the network of
// a name, else a 403 [*Error] naming the key's networks.
func (c *Caller) RequireNetwork(name string) error {
	if c.SeesNetwork(name) {
		return nil
	}
	return Errorf(http.StatusForbidden, wire.ErrForbidden, "this API key is limited to the networks %s, not %q", strings.Join(c.Networks, ", "), name)
}

type callerKey struct{}

// keyCache remembers recent API key lookups for a short time, so that a
// stream of requests does not hit the database for each. A revoked key
// stops working within the TTL.
type keyCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]keyEntry
}

type keyEntry struct {
	c   *Caller
	exp time.Time
}

const keyCacheMax = 10000

func (kc *keyCache) get(hash string, now time.Time) *Caller {
	if kc.ttl <= 0 {
		return nil
	}
	kc.mu.Lock()
	defer kc.mu.Unlock()
	e, ok := kc.m[hash]
	if !ok || now.After(e.exp) {
		return nil
	}
	return e.c
}

func (kc *keyCache) put(hash string, c *Caller, now time.Time) {
	if kc.ttl <= 0 {
		return
	}
	kc.mu.Lock()
	defer kc.mu.Unlock()
	if len(kc.m) >= keyCacheMax {
		for k, e := range kc.m {
			if now.After(e.exp) {
				delete(kc.m, k)
			}
		}
		if len(kc.m) >= keyCacheMax {
			clear(kc.m)
		}
	}
	kc.m[hash] = keyEntry{c: c, exp: now.Add(kc.ttl)}
}

// authenticate finds the owner of the request's API key.
func (s *Server) authenticate(r *http.Request) (*Caller, error) {
	h := r.Header.Get("Authorization")
	scheme, secret, ok := strings.Cut(h, " ")
	secret = strings.TrimSpace(secret)
	if h == "" || !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" {
		e := Errorf(http.StatusUnauthorized, wire.ErrUnauthorized, "missing API key: send Authorization: Bearer KEY")
		e.headers = map[string]string{"WWW-Authenticate": `Bearer realm="baton"`}
		return nil, e
	}
	if len(secret) > 512 {
		return nil, s.badKey()
	}
	hash := store.HashAPIKey(secret)
	now := time.Now()
	if c := s.keys.get(hash, now); c != nil {
		if !c.ExpiresAt.IsZero() && !now.Before(c.ExpiresAt) {
			return nil, s.expiredKey(c)
		}
		return c, nil
	}
	k, err := s.st.LookupAPIKey(r.Context(), &store.LookupAPIKeyParams{Hash: hash})
	if errors.Is(err, store.ErrNotFound) {
		return nil, s.badKey()
	}
	if err != nil {
		return nil, err
	}
	c := &Caller{Owner: k.OwnerID, KeyID: k.ID, Scopes: k.Scopes, Networks: k.Networks, ExpiresAt: k.ExpiresAt}
	s.keys.put(hash, c, now)
	if !c.ExpiresAt.IsZero() && !now.Before(c.ExpiresAt) {
		return nil, s.expiredKey(c)
	}
	return c, nil
}

func (s *Server) expiredKey(c *Caller) error {
	e := Errorf(http.StatusUnauthorized, wire.ErrUnauthorized, "API key %s expired at %s", c.KeyID, c.ExpiresAt.UTC().Format(time.RFC3339))
	e.headers = map[string]string{"WWW-Authenticate": `Bearer realm="baton", error="invalid_token", error_description="the key expired"`}
	return e
}

func (s *Server) badKey() error {
	e := Errorf(http.StatusUnauthorized, wire.ErrUnauthorized, "invalid or revoked API key")
	e.headers = map[string]string{"WWW-Authenticate": `Bearer realm="baton", error="invalid_token"`}
	return e
}

// rateLimiter is a token bucket per API key: Rate requests per second on
// average, bursts of Burst.
type rateLimiter struct {
	rate  float64
	burst float64
	mu    sync.Mutex
	m     map[string]*bucket
	last  time.Time // last sweep
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newRateLimiter(rate float64, burst int) *rateLimiter {
	if rate <= 0 {
		return nil
	}
	b := float64(burst)
	if b < 1 {
		b = math.Max(1, math.Ceil(rate))
	}
	return &rateLimiter{rate: rate, burst: b, m: map[string]*bucket{}}
}

// allow takes a token for key; when there is none it returns how long to
// wait for one.
func (rl *rateLimiter) allow(key string, now time.Time) (bool, time.Duration) {
	if rl == nil {
		return true, 0
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if now.Sub(rl.last) > time.Minute && len(rl.m) > 1000 {
		// Forget keys whose bucket is full again.
		full := time.Duration(rl.burst / rl.rate * float64(time.Second))
		for k, b := range rl.m {
			if now.Sub(b.at) > full {
				delete(rl.m, k)
			}
		}
		rl.last = now
	}
	b := rl.m[key]
	if b == nil {
		b = &bucket{tokens: rl.burst, at: now}
		rl.m[key] = b
	}
	b.tokens = math.Min(rl.burst, b.tokens+now.Sub(b.at).Seconds()*rl.rate)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / rl.rate * float64(time.Second))
	return false, wait
}

// actor is the caller as the audit log names it.
func (c *Caller) actor() store.Actor { return store.Actor{KeyID: c.KeyID, RequestID: c.RequestID} }

// withActor returns ctx carrying the caller as the actor (a run resumed by
// a decision executes in the server's context, not the request's).
func withActor(ctx context.Context, c *Caller) context.Context {
	if c == nil {
		return ctx
	}
	return store.ContextWithActor(ctx, c.actor())
}
