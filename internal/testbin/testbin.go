// Package testbin builds a Go command once per test binary, for the tests
// that run it as a real process (the baton binary, a test MCP server).
package testbin

import (
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Build is a command built on first use. Its zero value with Pkg set is
// ready; it is safe for concurrent use by parallel tests.
type Build struct {
	// Pkg is the command's package, as `go build` takes it (an import
	// path, or a directory such as ".").
	Pkg string

	once sync.Once
	path string
	out  []byte
	err  error
}

// Path builds the command into dir, named name, the first time it is
// called, and returns the binary's path. dir must outlive every test that
// uses the binary (a directory of TestMain's, not t.TempDir). A failed
// build fails t, and every later caller, with go build's output.
func (b *Build) Path(t testing.TB, dir, name string) string {
	t.Helper()
	b.once.Do(func() {
		b.path = filepath.Join(dir, name)
		b.out, b.err = exec.Command("go", "build", "-o", b.path, b.Pkg).CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("go build %s: %v\n%s", b.Pkg, b.err, b.out)
	}
	return b.path
}
