package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestA2AJavaScriptClient drives the A2A side of `baton serve` with the
// official A2A JavaScript client, @a2a-js/sdk 0.3 (a2ajs/test.mjs, run by
// node's test runner after `npm ci` in a2ajs/ installs the package from
// a2ajs/package-lock.json): a real `baton serve` on loopback with the
// support and research example networks and a temporary SQLite database.
// Without node and npm it skips, except with CI=true, where it fails.
func TestA2AJavaScriptClient(t *testing.T) {
	bin := batonBin(t)
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed and CI=true: the A2A JavaScript client tests must run", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	dir, err := filepath.Abs("a2ajs")
	if err != nil {
		t.Fatal(err)
	}
	npm := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	npm.Dir = dir
	if out, err := npm.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
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
	tmp := t.TempDir()
	serve := newServe(tmp, bin, "--database", db.url, "--shutdown-timeout", "5s",
		"--network", filepath.Join("..", "examples", "support", "network.yaml"),
		"--network", filepath.Join("..", "examples", "research", "network.yaml"))
	if err := serve.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serve.stop(15 * time.Second)
		if t.Failed() {
			t.Logf("log of baton serve:\n%s", serve.tail(6000))
		}
	})

	node := exec.Command("node", "--test", "--test-concurrency=1", "--test-reporter=spec", "test.mjs")
	node.Dir = dir
	node.Env = append(os.Environ(), "BATON_URL="+serve.url(), "BATON_KEY="+keys[owner], "BATON_OTHER_KEY="+keys["someone-else"])
	out, err := node.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test a2ajs/test.mjs: %v\n%s", err, out)
	}
	t.Logf("node --test a2ajs/test.mjs:\n%s", out)
}
