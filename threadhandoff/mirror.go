package threadhandoff

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/retry"
	"github.com/batonhq/baton/store"
)

// maxPendingMirror bounds the failed upserts kept for a later handoff to
// retry; maxFlush bounds how many one handoff retries.
const (
	maxPendingMirror = 1000
	maxFlush         = 10
)

// mirror upserts accepted summaries with retries and a storm guard: at most
// one upsert in flight per owner and handoff id, none again within a
// minimum interval, and failed upserts kept (bounded) for the next
// successful handoff to retry.
type mirror struct {
	target      MirrorTarget
	policy      retry.Policy
	timeout     time.Duration
	minInterval time.Duration
	sleep       retry.Sleeper
	log         *slog.Logger
	now         func() time.Time

	mu       sync.Mutex
	inflight map[string]chan struct{}
	last     map[string]attempt
	pending  map[string]*pendingUpsert
	order    []string // pending keys, oldest first
}

type attempt struct {
	at time.Time
	ok bool
}

type pendingUpsert struct {
	params *store.UpsertThreadSummaryParams
	attrs  []any
}

func newMirror(target MirrorTarget, cfg Config, log *slog.Logger, now func() time.Time) *mirror {
	m := &mirror{target: target, timeout: cfg.MirrorTimeout, minInterval: cfg.MirrorMinInterval, log: log, now: now,
		policy:   retry.Policy{MaxAttempts: cfg.MirrorRetry.MaxAttempts, BaseDelay: cfg.MirrorRetry.BaseDelay, MaxDelay: cfg.MirrorRetry.MaxDelay},
		inflight: map[string]chan struct{}{}, last: map[string]attempt{}, pending: map[string]*pendingUpsert{}}
	if m.policy.MaxAttempts <= 0 {
		m.policy.MaxAttempts = 3
	}
	if m.policy.BaseDelay <= 0 {
		m.policy.BaseDelay = 100 * time.Millisecond
	}
	if m.policy.MaxDelay <= 0 {
		m.policy.MaxDelay = 2 * time.Second
	}
	if m.timeout <= 0 {
		m.timeout = 2 * time.Second
	}
	if m.minInterval <= 0 {
		m.minInterval = time.Second
	}
	if cfg.Sleep != nil {
		m.sleep = cfg.Sleep
	}
	return m
}

// mirrorTransient reports whether a mirror error may pass: the store is
// unreachable, an attempt timed out, or the error says it is temporary.
func mirrorTransient(err error) bool {
	return errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || retry.Transient(err)
}

// upsert mirrors p and returns MirrorOK, MirrorDegraded or MirrorSkipped.
// attrs are logged with the outcome. After a success it retries up to
// maxFlush upserts that failed earlier, stopping at the first failure.
func (m *mirror) upsert(ctx context.Context, p *store.UpsertThreadSummaryParams, attrs ...any) string {
	key := p.OwnerID + "\x00" + p.HandoffID
	m.mu.Lock()
	if ch, ok := m.inflight[key]; ok {
		m.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		return MirrorSkipped
	}
	now := m.now()
	for k, a := range m.last {
		if now.Sub(a.at) >= m.minInterval {
			delete(m.last, k)
		}
	}
	if a, ok := m.last[key]; ok {
		m.mu.Unlock()
		if !a.ok {
			return MirrorDegraded
		}
		return MirrorSkipped
	}
	ch := make(chan struct{})
	m.inflight[key] = ch
	m.mu.Unlock()

	err := m.try(ctx, p, m.policy, attrs)
	m.finish(key, ch, err, p, attrs)
	if err != nil {
		m.log.WarnContext(ctx, "thread handoff summary mirror failed: thread handoff completed without it",
			append([]any{"handoff_store_status", MirrorDegraded, "error", err}, attrs...)...)
		return MirrorDegraded
	}
	m.flush(ctx, key)
	return MirrorOK
}

// try runs the upsert with retries, each attempt bounded by m.timeout.
func (m *mirror) try(ctx context.Context, p *store.UpsertThreadSummaryParams, policy retry.Policy, attrs []any) error {
	return retry.Do(ctx, policy, m.sleep, mirrorTransient,
		func(n int, err error, d time.Duration) {
			m.log.DebugContext(ctx, "thread handoff summary mirror attempt failed", append([]any{"attempt", n, "delay", d, "error", err}, attrs...)...)
		},
		func(int) error {
			actx, cancel := context.WithTimeout(ctx, m.timeout)
			defer cancel()
			_, err := m.target.UpsertThreadSummary(actx, p)
			return err
		})
}

// finish records an attempt and releases its key.
func (m *mirror) finish(key string, ch chan struct{}, err error, p *store.UpsertThreadSummaryParams, attrs []any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.inflight, key)
	close(ch)
	m.last[key] = attempt{at: m.now(), ok: err == nil}
	if err == nil {
		delete(m.pending, key)
		return
	}
	if _, ok := m.pending[key]; !ok {
		m.order = append(m.order, key)
	}
	m.pending[key] = &pendingUpsert{params: p, attrs: attrs}
	for len(m.pending) > maxPendingMirror {
		old := m.order[0]
		m.order = m.order[1:]
		if pu, ok := m.pending[old]; ok {
			delete(m.pending, old)
			m.log.Error("thread handoff summary mirror backlog full: dropping the oldest", append([]any{"handoff_store_status", MirrorDegraded}, pu.attrs...)...)
		}
	}
}

// flush retries earlier failures, once each, oldest first.
func (m *mirror) flush(ctx context.Context, skip string) {
	for range maxFlush {
		m.mu.Lock()
		var key string
		var pu *pendingUpsert
		for len(m.order) > 0 && pu == nil {
			key, m.order = m.order[0], m.order[1:]
			if key == skip || m.inflight[key] != nil {
				continue
			}
			pu = m.pending[key]
		}
		if pu == nil {
			m.mu.Unlock()
			return
		}
		delete(m.pending, key)
		ch := make(chan struct{})
		m.inflight[key] = ch
		m.mu.Unlock()
		err := m.try(ctx, pu.params, retry.Policy{MaxAttempts: 1}, pu.attrs)
		m.finish(key, ch, err, pu.params, pu.attrs)
		if err != nil {
			return
		}
		m.log.InfoContext(ctx, "thread handoff summary mirrored on retry", append([]any{"handoff_store_status", MirrorOK}, pu.attrs...)...)
	}
}

// pendingCount returns the number of upserts waiting for a retry.
func (m *mirror) pendingCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending)
}
