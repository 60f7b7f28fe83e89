package e2e_test

import "testing"

// TestA2AJavaScriptClient drives the A2A side of `baton serve` with the
// official A2A JavaScript client, @a2a-js/sdk 0.3 (a2ajs/test.mjs, run by
// node's test runner after `npm ci` in a2ajs/ installs the package from
// a2ajs/package-lock.json): a real `baton serve` on loopback with the
// support and research example networks and a temporary SQLite database.
// Without node and npm it skips, except with CI=true, where it fails.
func TestA2AJavaScriptClient(t *testing.T) {
	runNodeClient(t, "a2ajs", "A2A JavaScript client")
}
