package draft

import (
	"context"
	"sync"
	"time"
)

// KindThread is the kind of the signal a process sends when a checkpoint of
// a run on a thread commits and some process wants to know (see
// [Interest]): OwnerID the thread's owner, Key the thread's id, Data the
// run's. A receiver reads the thread's latest checkpoint from the store.
const KindThread = "thread"

// WantSuffix makes the kind of the signals that announce an interest in
// the signals of a kind (see [Interest]): "thread.want".
const WantSuffix = ".want"

// Want announces, to every process on the store, that this process wants
// the signals of kind about key of owner for the next ttl of their
// [Interest]: a process that keeps wanting them announces it again within
// that time.
func Want(ctx context.Context, sg Signaller, kind, owner, key string) error {
	return WantFrom(ctx, sg, kind, owner, key, "")
}

// WantFrom is [Want] naming the process that wants the signals, from (any
// string unique to it): a sender that is that process can tell, with
// [Interest.WantedElsewhere], that nobody else wants them.
func WantFrom(ctx context.Context, sg Signaller, kind, owner, key, from string) error {
	return sg.Signal(ctx, Signal{Kind: kind + WantSuffix, OwnerID: owner, Key: key, Data: from})
}

// Interest records which keys of a kind some process wants signals about,
// from the announcements of [Want], so that a sender sends a signal only
// when somebody listens for it (a NOTIFY is a statement). A process that
// wants a key announces it every ttl/3. Announcements are signals, which
// may be lost: a key is wanted for ttl after its last one, and every key is
// wanted for ttl/3 (until every wanting process announced again) after the
// Interest starts listening and after its broker says it may have missed
// signals.
type Interest struct {
	kind string
	ttl  time.Duration

	mu   sync.Mutex
	keys map[string]time.Time // owner "\x00" key -> wanted until
	// by: owner "\x00" key -> the processes that named themselves
	// (WantFrom) -> wanted until; an announcement without a name counts
	// in keys only.
	by     map[string]map[string]time.Time
	all    time.Time // every key wanted until
	cancel func()
}

// NewInterest listens on sg for the announcements of interest in the
// signals of kind, each good for ttl.
func NewInterest(sg Signaller, kind string, ttl time.Duration) *Interest {
	in := &Interest{kind: kind, ttl: ttl, keys: map[string]time.Time{}, by: map[string]map[string]time.Time{}, all: time.Now().Add(ttl / 3)}
	in.cancel = sg.OnSignal(kind+WantSuffix, in.heard)
	return in
}

func (in *Interest) heard(s Signal) {
	now := time.Now()
	in.mu.Lock()
	defer in.mu.Unlock()
	if s.Key == "" {
		in.all = now.Add(in.ttl / 3) // announcements may have been lost
		return
	}
	if len(in.keys) >= 1024 && len(in.keys)%256 == 0 {
		for k, t := range in.keys {
			if now.After(t) {
				delete(in.keys, k)
				delete(in.by, k)
			}
		}
	}
	k := s.OwnerID + "\x00" + s.Key
	in.keys[k] = now.Add(in.ttl)
	if s.Data == "" {
		in.by[k] = nil // somebody who did not say who: anybody
		return
	}
	if m, ok := in.by[k]; !ok || m != nil {
		if m == nil {
			m = map[string]time.Time{}
			in.by[k] = m
		}
		if len(m) >= 64 {
			for p, t := range m {
				if now.After(t) {
					delete(m, p)
				}
			}
		}
		m[s.Data] = now.Add(in.ttl)
	}
}

// WantedElsewhere reports whether some process other than self (the name
// it announces with [WantFrom]) may want the signals about key of owner.
func (in *Interest) WantedElsewhere(owner, key, self string) bool {
	return in.wantedElsewhere(owner, key, self, true)
}

// AnnouncedElsewhere reports whether a process other than self has
// announced, within ttl, that it wants the signals about key of owner: it
// is [Interest.WantedElsewhere] without the keys every process is taken to
// want while announcements may have been missed (after the Interest starts
// listening, after its broker reconnects). A sender that pays for every
// listener it assumes (a write, not a signal) asks this.
func (in *Interest) AnnouncedElsewhere(owner, key, self string) bool {
	return in.wantedElsewhere(owner, key, self, false)
}

func (in *Interest) wantedElsewhere(owner, key, self string, assumed bool) bool {
	now := time.Now()
	k := owner + "\x00" + key
	in.mu.Lock()
	defer in.mu.Unlock()
	if assumed && now.Before(in.all) {
		return true
	}
	if t, ok := in.keys[k]; !ok || now.After(t) {
		return false
	}
	m := in.by[k]
	if m == nil {
		return true // announced without a name
	}
	for p, t := range m {
		if p != self && !now.After(t) {
			return true
		}
	}
	return false
}

// Wanted reports whether some process may want the signals about key of
// owner.
func (in *Interest) Wanted(owner, key string) bool {
	now := time.Now()
	in.mu.Lock()
	defer in.mu.Unlock()
	if now.Before(in.all) {
		return true
	}
	t, ok := in.keys[owner+"\x00"+key]
	if ok && now.After(t) {
		delete(in.keys, owner+"\x00"+key)
		delete(in.by, owner+"\x00"+key)
		return false
	}
	return ok
}

// Close stops listening.
func (in *Interest) Close() { in.cancel() }
