package e2e_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/webhook/webhooktest"
)

// jsDeskNetwork transfers to a remote agent (%s: name, %s: card URL).
const jsDeskNetwork = `version: 1
name: %s
entry: triage
limits: {max_turns: 8, timeout: 2m}
agents:
  - name: triage
    description: Sends questions to the expert.
    model: scripted
    rules:
      - when: "(?i)transfer"
        tool_calls: [{name: transfer_to_expert, arguments: {}}]
    reply: Ask me to transfer you.
    transfers: [{to: expert}]
  - name: expert
    description: The expert, a JavaScript A2A agent.
    remote:
      card: %s
`

// TestA2AJavaScriptClient drives the A2A side of `baton serve` with the
// official A2A JavaScript clients (a2ajs/test.mjs and v1.mjs, run by
// node's test runner after `npm ci` in a2ajs/ installs the packages from
// a2ajs/package-lock.json): @a2a-js/sdk 0.3 (protocol 0.3) and 1.3
// (protocol 1.0), on a real `baton serve` on loopback with the support and
// research example networks, a temporary SQLite database, and two networks
// that transfer to remote agents built on each SDK's server side
// (a2ajs/agents.mjs, in its own node process): their answers stream
// through, and a cancelled run cancels the remote task. Push notification
// configs (given with a message, and set on a waiting task) reach a
// receiver on loopback in node, signed. Without node and npm it skips,
// except with CI=true, where it fails.
func TestA2AJavaScriptClient(t *testing.T) {
	nodeInstall(t, "a2ajs", "A2A JavaScript client")
	abs, err := filepath.Abs("a2ajs")
	if err != nil {
		t.Fatal(err)
	}
	agents := exec.Command("node", "agents.mjs")
	agents.Dir = abs
	agents.Stderr = os.Stderr
	out, err := agents.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := agents.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = agents.Process.Kill()
		_ = agents.Wait()
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	var urls struct{ V03, V1 string }
	select {
	case l := <-line:
		if err := json.Unmarshal([]byte(l), &urls); err != nil || urls.V03 == "" || urls.V1 == "" {
			t.Fatalf("agents.mjs printed %q: %v", l, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("agents.mjs did not start within 60s")
	}
	dir := t.TempDir()
	var networks []string
	for _, n := range []struct{ name, card string }{
		{"desk03", urls.V03 + "/a2a/.well-known/agent-card.json"},
		{"desk1", urls.V1 + "/.well-known/agent-card.json"},
	} {
		f := filepath.Join(dir, n.name+".yaml")
		if err := os.WriteFile(f, fmt.Appendf(nil, jsDeskNetwork, n.name, n.card), 0o644); err != nil {
			t.Fatal(err)
		}
		networks = append(networks, f)
	}
	agentsEnv, _ := json.Marshal(map[string]string{"v03": urls.V03, "v1": urls.V1})
	// Webhooks on, so that the clients' push notification configs reach
	// their receivers on loopback (push.mjs verifies the signatures).
	secret := webhooktest.NewSecret(t)
	runNodeTests(t, "a2ajs", networks, []string{"--webhook-secret", secret, "--webhook-allow", "127.0.0.1"},
		"A2A_AGENTS="+string(agentsEnv), "BATON_WEBHOOK_SECRET="+secret)
}
