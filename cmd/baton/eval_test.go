package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/logtest"
)

// cli runs baton in-process with args as they are.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut logtest.Buffer
	code = run(t.Context(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestEvalExportAndRun: a conversation run with baton run, exported with
// baton eval export, replays entirely from its recording with baton eval;
// a changed network regresses against the original, and the gate fails.
func TestEvalExportAndRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "baton.db")
	code, stdout, stderr := cli(t, "run", "--database", db, "--json", supportNet, "I was charged twice for order 1234")
	if code != 0 {
		t.Fatalf("baton run: exit %d\n%s", code, stderr)
	}
	start, _, err := runStartOf(stdout)
	if err != nil || start.ThreadID == "" {
		t.Fatalf("run_start %q: %v", stdout, err)
	}

	set := filepath.Join(dir, "set.yaml")
	code, stdout, stderr = cli(t, "eval", "export", "--database", db, "--thread", start.ThreadID, "--network", supportNet, "-o", set)
	if code != 0 || stdout != "" || !strings.Contains(stderr, "wrote 1 cases to") {
		t.Fatalf("baton eval export: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}

	junit, html := filepath.Join(dir, "report.xml"), filepath.Join(dir, "report.html")
	code, stdout, stderr = cli(t, "eval", set, "--network", supportNet, "--junit", junit, "--html", html)
	if code != 0 || !strings.Contains(stdout, "0 live, 3 replayed") || !strings.Contains(stdout, "1 cases: 1 passed, 0 failed") {
		t.Fatalf("baton eval: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	for _, f := range []string{junit, html} {
		if b, err := os.ReadFile(f); err != nil || len(b) == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	b, _ := os.ReadFile(junit)
	if err := xml.Unmarshal(b, new(struct{})); err != nil {
		t.Errorf("JUnit report: %v", err)
	}

	// Double charges now go to tech: the case regresses against the
	// baseline, and baton eval exits 1.
	changed := filepath.Join(dir, "changed.yaml")
	src, err := os.ReadFile(supportNet)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(changed, []byte(strings.Replace(string(src), "- name: transfer_to_billing", "- name: transfer_to_tech", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = cli(t, "eval", set, "--network", changed, "--baseline", supportNet, "--json", "-j", "2")
	if code != 1 || !strings.Contains(stderr, "1 failed (1 regressed)") {
		t.Fatalf("baton eval of a regression: exit %d\nstderr %s", code, stderr)
	}
	var r struct {
		Summary struct{ Regressed, Failed int }
		Cases   []struct {
			Regressions []struct{ Metric string }
			Changes     []struct{ Aspect string }
		}
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout)
	}
	if r.Summary.Regressed != 1 || len(r.Cases[0].Regressions) == 0 || r.Cases[0].Changes[0].Aspect != "transfers" {
		t.Errorf("report = %+v", r)
	}
}

// TestEvalUsage: a malformed set, a missing network, bad flags exit 2 and
// say why.
func TestEvalUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nname: x\ncases:\n  - id: a\n    turns:\n      - user: hi\n        expect: {status: finished}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("version: 1\nname: x\ncases:\n  - id: a\n    turns: [{user: hi}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", bad, "--network", supportNet}, `line 7: $.cases[0].turns[0].expect.status: status "finished"`},
		{[]string{"eval", good}, "want --network NETWORK.yaml"},
		{[]string{"eval", good, "--network", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
		{[]string{"eval", good, "--network", supportNet, "-j", "0"}, "-j must be 1 or more"},
		{[]string{"eval", filepath.Join(dir, "none.yaml"), "--network", supportNet}, "none.yaml"},
		{[]string{"eval", "export"}, "want --thread ID or --since"},
		{[]string{"eval", "export", "--since", "yesterday"}, `--since "yesterday"`},
	} {
		code, _, stderr := cli(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %s; want %d and %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
	code, _, stderr := cli(t, "eval", "export", "--help")
	if code != 0 || !strings.HasPrefix(stderr, "usage: baton eval export") {
		t.Errorf("eval export --help: exit %d\n%s", code, stderr)
	}
}

func TestParseSince(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.Local)
	for in, want := range map[string]time.Time{
		"24h":                  now.Add(-24 * time.Hour),
		"2026-03-01":           time.Date(2026, 3, 1, 0, 0, 0, 0, time.Local),
		"2026-03-01T10:00:00Z": time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
	} {
		got, err := parseSince(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseSince("-1h", now); err == nil {
		t.Error("a negative duration is accepted")
	}
}

// TestEvalADKConfig: baton eval follows an ADK evalset's test_config.json
// (the trajectory matched IN_ORDER, no ROUGE-1 since it is not listed) and
// names on standard error the criteria it does not score.
func TestEvalADKConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data, err := os.ReadFile("../../eval/evalset/testdata/adk/support.evalset.json")
	if err != nil {
		t.Fatal(err)
	}
	set := filepath.Join(dir, "support.evalset.json")
	if err := os.WriteFile(set, data, 0o600); err != nil {
		t.Fatal(err)
	}
	config := `{"criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"}, "safety_v1": 0.8}}`
	if err := os.WriteFile(filepath.Join(dir, "test_config.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := cli(t, "eval", "--network", supportNet, "--json", set)
	if code != 0 {
		t.Fatalf("baton eval: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "baton eval: warning: ADK criterion safety_v1 is not scored by baton eval") {
		t.Errorf("stderr = %q, want the safety_v1 warning", stderr)
	}
	var r struct {
		Summary struct {
			Metrics []struct {
				Metric string `json:"metric"`
				Checks int    `json:"checks"`
			} `json:"metrics"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	var metrics []string
	for _, m := range r.Summary.Metrics {
		metrics = append(metrics, m.Metric)
	}
	if got := strings.Join(metrics, ","); got != "transfers,tools" {
		t.Errorf("metrics = %s, want transfers,tools (no rouge1, no rubric)", got)
	}
}
