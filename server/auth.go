package server

import (
	"errors"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/store"
)

// Caller is the authenticated client of a request: the owner of its API
// key, the tenant of everything it reads and writes.
type Caller struct {
	Owner string
	KeyID string
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
		return c, nil
	}
	k, err := s.st.LookupAPIKey(r.Context(), &store.LookupAPIKeyParams{Hash: hash})
	if errors.Is(err, store.ErrNotFound) {
		return nil, s.badKey()
	}
	if err != nil {
		return nil, err
	}
	c := &Caller{Owner: k.OwnerID, KeyID: k.ID}
	s.keys.put(hash, c, now)
	return c, nil
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
