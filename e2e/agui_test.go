package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAGUIClient drives the AG-UI route of `baton serve` (POST
// /v1/agui/{network}, docs/agui.md) with the official AG-UI client,
// @ag-ui/client and @ag-ui/core 1.0 (agui/test.mjs, run by node's test
// runner after `npm ci` in agui/ installs the packages from
// agui/package-lock.json): a real `baton serve` on loopback with the support
// and research example networks and a temporary SQLite database. The
// client validates every event it gets (schemas and order). Without node
// and npm it skips, except with CI=true, where it fails.
func TestAGUIClient(t *testing.T) {
	bin := batonBin(t)
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed and CI=true: the AG-UI client tests must run", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	dir, err := filepath.Abs("agui")
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
	node.Env = append(os.Environ(), "BATON_URL="+serve.url(), "BATON_KEY="+keys[owner], "BATON_OTHER_KEY="+keys["someone-else"],
		"SUPPRESS_TRANSFORMATION_WARNINGS=true")
	out, err := node.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test agui/test.mjs: %v\n%s", err, out)
	}
	t.Logf("node --test agui/test.mjs:\n%s", out)
}
