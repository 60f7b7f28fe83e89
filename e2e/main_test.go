// Package e2e_test runs the baton binary as real processes — `baton run`,
// `baton serve`, `baton worker` — on a real SQLite file and a real
// PostgreSQL schema, with an idempotency-keyed HTTP tool service, and
// checks what users of those processes see:
//
//   - TestSameBehaviourEverywhere: one conversation gives the same events,
//     tool calls and stored thread in `baton run`, in `baton serve` with its
//     own workers, and in `baton serve --workers 0` with a `baton worker`;
//   - TestKillEverything: runs submitted while serve, worker and CLI
//     processes are SIGKILLed at random moments are neither lost nor stuck,
//     and no tool effect happens twice (scripts/killtest.sh runs it against
//     a database of your choice).
//
// The binary is built once per test binary. PostgreSQL runs when
// BATON_TEST_DATABASE_URL is set (a fresh schema per database, dropped at
// the end); with CI=true it must be. The tests skip only under -short.
package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/internal/testbin"
)

// owner is the tenant of every test: API keys and `baton run --owner`.
const owner = "acme"

// network is the network file of the tests.
var network = filepath.Join("testdata", "shop.yaml")

// binDir holds the binary built for this test binary.
var binDir string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

// runTests runs the tests with binDir a new temporary directory, removed
// after them, and returns the exit code.
func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "baton-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	// Keep the CLI's default database out of the user's data directory
	// (every command here names its --database anyway).
	os.Setenv("XDG_DATA_HOME", dir)
	os.Unsetenv("BATON_DATABASE_URL")
	return m.Run()
}

// baton is the baton binary of this test binary.
var baton = testbin.Build{Pkg: "github.com/batonhq/baton/cmd/baton"}

// batonBin returns the baton binary, built on first use. It skips the test
// under -short: the tests of this package run processes for a minute or
// more.
func batonBin(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the end-to-end tests build baton and run its processes")
	}
	return baton.Path(t, binDir, "baton")
}
