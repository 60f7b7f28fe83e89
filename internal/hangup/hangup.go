// Package hangup tells when the peer of a connection that nothing reads
// hangs up: a server that parks idle streams with no goroutine blocked in
// a read of each (see server's thread streams) learns of a client gone at
// once, instead of at its next write.
//
// On Linux one epoll instance watches every registered connection, with
// one goroutine for all of them; elsewhere [Watcher.Watch] does nothing
// and a closed peer is seen at the next write.
package hangup

import (
	"net"
	"sync"
)

// Watcher watches connections for their peer's hangup. The zero value is
// not usable: call [New].
type Watcher struct {
	mu     sync.Mutex
	next   uint64
	funcs  map[uint64]func()
	poller poller // nil where unsupported or when it failed to start
}

// New returns a Watcher. Its goroutine starts with the first Watch and
// runs for the life of the process.
func New() *Watcher {
	return &Watcher{funcs: map[uint64]func(){}}
}

// Watch calls f, in a goroutine of its own, when conn's peer hangs up or
// sends data (which a stream's client does not) or the connection fails,
// as long as the watch is not cancelled. Cancel before closing conn: the
// returned func removes the watch (it is safe to call more than once).
// Where hang-ups cannot be watched, Watch does nothing and reports false.
func (w *Watcher) Watch(conn net.Conn, f func()) (cancel func(), ok bool) {
	fd, ok := rawConn(conn)
	if !ok {
		return func() {}, false
	}
	w.mu.Lock()
	if w.poller == nil {
		p, err := newPoller(w.fire)
		if err != nil {
			w.mu.Unlock()
			return func() {}, false
		}
		w.poller = p
	}
	w.next++
	id := w.next
	w.funcs[id] = f
	p := w.poller
	w.mu.Unlock()
	if err := p.add(fd, id); err != nil {
		w.mu.Lock()
		delete(w.funcs, id)
		w.mu.Unlock()
		return func() {}, false
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			delete(w.funcs, id)
			w.mu.Unlock()
			p.remove(fd)
		})
	}, true
}

// fire calls the func of a watch whose connection hung up.
func (w *Watcher) fire(id uint64) {
	w.mu.Lock()
	f := w.funcs[id]
	w.mu.Unlock()
	if f != nil {
		go f()
	}
}

// Len returns the number of connections watched.
func (w *Watcher) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.funcs)
}
