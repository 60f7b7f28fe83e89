package memory

import (
	"context"
	"fmt"
	"strconv"
	"sync"
)

// Map is a [Store] in process memory, for tests and examples. Versions are
// counters ("1", "2" …). The zero Map is ready to use; a Map must not be
// copied after first use. It is safe for concurrent use.
type Map struct {
	mu   sync.Mutex
	docs map[[2]string]mapDoc
}

type mapDoc struct {
	content string
	version int64
}

// Get implements [Store].
func (m *Map) Get(ctx context.Context, owner, agent string) (Document, error) {
	if owner == "" || agent == "" {
		return Document{}, fmt.Errorf("%w: owner and agent are required", ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return Document{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.docs[[2]string{owner, agent}]
	if !ok {
		return Document{}, nil
	}
	return Document{Content: d.content, Version: strconv.FormatInt(d.version, 10)}, nil
}

// Put implements [Store].
func (m *Map) Put(ctx context.Context, owner, agent, content, expected string) (string, error) {
	if owner == "" || agent == "" {
		return "", fmt.Errorf("%w: owner and agent are required", ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	key := [2]string{owner, agent}
	d, ok := m.docs[key]
	actual := ""
	if ok {
		actual = strconv.FormatInt(d.version, 10)
	}
	if actual != expected {
		return "", &ConflictError{Owner: owner, Agent: agent, Expected: expected, Actual: actual}
	}
	if m.docs == nil {
		m.docs = map[[2]string]mapDoc{}
	}
	d = mapDoc{content: content, version: d.version + 1}
	m.docs[key] = d
	return strconv.FormatInt(d.version, 10), nil
}
