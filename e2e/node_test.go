package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runNodeClient runs dir/test.mjs with node's test runner against a real
// `baton serve` on loopback (the support and research example networks, a
// temporary SQLite database), after `npm ci` in dir installs the client
// packages from its package-lock.json. The script gets BATON_URL, BATON_KEY
// (an API key of owner) and BATON_OTHER_KEY (another owner's), and env.
// Without node and npm the test skips, except with CI=true, where it fails:
// what names the client in the messages.
func runNodeClient(t *testing.T, dir, what string, env ...string) {
	t.Helper()
	nodeInstall(t, dir, what)
	runNodeTests(t, dir, nil, nil, env...)
}

// nodeInstall checks that node and npm are there (skipping the test
// without them, failing it with CI=true) and installs dir's packages with
// npm ci.
func nodeInstall(t *testing.T, dir, what string) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed and CI=true: the %s tests must run", tool, what)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	npm := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	npm.Dir = abs
	if out, err := npm.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", abs, err, out)
	}
}

// nodeFileTimeout bounds a node test file's run.
const nodeFileTimeout = 6 * time.Minute

// runNodeTests runs dir/test.mjs (installed by nodeInstall) against a
// real baton serve of the support and research example networks and
// networks, started with serveArgs too.
func runNodeTests(t *testing.T, dir string, networks, serveArgs []string, env ...string) {
	t.Helper()
	bin := batonBin(t)
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	db := openSQLite(t)
	keys := map[string]string{}
	for _, o := range []string{owner, "someone-else"} {
		out, err := exec.Command(bin, "keys", "create", "--owner", o, "--database", db.url).Output()
		if err != nil {
			t.Fatalf("baton keys create: %v", err)
		}
		keys[o] = strings.TrimSpace(string(out))
	}
	args := []string{"--database", db.url, "--shutdown-timeout", "5s",
		"--network", filepath.Join("..", "examples", "support", "network.yaml"),
		"--network", filepath.Join("..", "examples", "research", "network.yaml")}
	for _, n := range networks {
		args = append(args, "--network", n)
	}
	args = append(args, serveArgs...)
	serve := newServe(t.TempDir(), bin, args...)
	if err := serve.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serve.stop(15 * time.Second)
		if t.Failed() {
			t.Logf("log of baton serve:\n%s", serve.tail(6000))
		}
	})

	// Each node test has 2 minutes, the whole file 6: a client that
	// hangs fails its test with node's report of where, instead of
	// holding the package until go test's -timeout kills it without one.
	ctx, cancel := context.WithTimeout(t.Context(), nodeFileTimeout)
	defer cancel()
	node := exec.CommandContext(ctx, "node", "--test", "--test-concurrency=1", "--test-reporter=spec", "--test-timeout=120000", "test.mjs")
	node.Dir = abs
	node.Env = append(append(os.Environ(), "BATON_URL="+serve.url(), "BATON_KEY="+keys[owner], "BATON_OTHER_KEY="+keys["someone-else"]), env...)
	// Interrupted first (node prints its report), killed 10 s later; the
	// pipes of what it started close at most 10 s after.
	node.Cancel = func() error { return node.Process.Signal(os.Interrupt) }
	node.WaitDelay = 10 * time.Second
	out, err := node.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test %s/test.mjs: %v (after %s at most)\n%s", dir, err, nodeFileTimeout, out)
	}
	t.Logf("node --test %s/test.mjs:\n%s", dir, out)
}
