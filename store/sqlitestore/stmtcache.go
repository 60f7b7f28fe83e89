package sqlitestore

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache keeps prepared statements of a pool, so that hot queries are
// parsed by SQLite once per connection rather than at every call (the
// driver has no statement cache of its own).
//
// A statement missing from the cache is prepared in the background: the
// caller may hold the pool's only connection in a transaction, where
// preparing on the pool would wait for itself. Until it is ready, callers
// run the query unprepared.
type stmtCache struct {
	db     *sql.DB
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	stmts   map[string]*sql.Stmt
	pending map[string]bool
}

func newStmtCache(db *sql.DB) *stmtCache {
	ctx, cancel := context.WithCancel(context.Background())
	return &stmtCache{db: db, ctx: ctx, cancel: cancel, stmts: map[string]*sql.Stmt{}, pending: map[string]bool{}}
}

// lookup returns the prepared statement of query, or nil while it is not
// prepared yet.
func (c *stmtCache) lookup(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.stmts[query]; st != nil {
		return st
	}
	if c.closed || c.pending[query] {
		return nil
	}
	c.pending[query] = true
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		st, err := c.db.PrepareContext(c.ctx, query)
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.pending, query)
		if err != nil {
			return // tried again at the next lookup
		}
		if c.closed {
			st.Close()
			return
		}
		c.stmts[query] = st
	}()
	return nil
}

// close closes the statements; it waits for background preparations.
func (c *stmtCache) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.stmts {
		st.Close()
		delete(c.stmts, q)
	}
}
