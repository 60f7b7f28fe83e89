package e2e_test

import "testing"

// TestAGUIClient drives the AG-UI route of `baton serve` (POST
// /v1/agui/{network}, docs/agui.md) with the official AG-UI client,
// @ag-ui/client and @ag-ui/core 1.0 (agui/test.mjs, run by node's test
// runner after `npm ci` in agui/ installs the packages from
// agui/package-lock.json): a real `baton serve` on loopback with the support
// and research example networks and a temporary SQLite database. The
// client validates every event it gets (schemas and order). Without node
// and npm it skips, except with CI=true, where it fails.
func TestAGUIClient(t *testing.T) {
	runNodeClient(t, "agui", "AG-UI client", "SUPPRESS_TRANSFORMATION_WARNINGS=true")
}
