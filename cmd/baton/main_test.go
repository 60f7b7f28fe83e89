package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/logtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// runCLI runs baton in-process with args and returns its exit code, stdout
// and stderr. Commands that store threads get a database of their own.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	if len(args) > 0 && (args[0] == "run" || args[0] == "resume") {
		db := "sqlite:" + filepath.Join(t.TempDir(), "baton.db")
		args = append([]string{args[0], "--database", db}, args[1:]...)
	}
	// The buffers are safe for concurrent writes: the process logger
	// (slog.Default) is shared by the tests that run in parallel.
	var out, errOut logtest.Buffer
	code = run(t.Context(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

var (
	runIDPattern       = regexp.MustCompile(`\brun_[0-9a-z]{8,}\b`)
	threadIDPattern    = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	fingerprintPattern = regexp.MustCompile(`\b[0-9a-f]{24}\b`)
	databasePattern    = regexp.MustCompile(`sqlite:\S*/baton\.db\b`)
)

// normalise replaces what changes from run to run (run and thread ids, the
// test's database) and what changes with any edit of a network file (the
// fingerprint).
func normalise(s string) string {
	s = runIDPattern.ReplaceAllString(s, "run_ID")
	s = threadIDPattern.ReplaceAllString(s, "THREAD_ID")
	s = databasePattern.ReplaceAllString(s, "sqlite:DB")
	return fingerprintPattern.ReplaceAllString(s, "FINGERPRINT")
}

// golden compares got with testdata/name.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/baton -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test ./cmd/baton -update rewrites it)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

const (
	supportNet  = "../../examples/support/network.yaml"
	pipelineNet = "../../examples/pipeline/network.yaml"
)

// transcriptCases are runs whose transcript is kept in testdata/NAME.golden.
var transcriptCases = []struct {
	name string
	args []string
	code int
	// contains are lines the transcript must show, whatever the golden says.
	contains []string
}{
	{
		name: "support_billing",
		args: []string{"run", supportNet, "I was charged twice for order 1234"},
		contains: []string{
			"▶ triage is active (entry)",
			"  → triage calls transfer_to_billing {",
			"⇒ transfer triage → billing (transfer, history full): Customer reports being charged twice for order 1234",
			`  context {"issue":"double_charge","order_id":"1234","reason":"Customer reports being charged twice for order 1234"}`,
			"▶ billing is active (transfer)",
			"  → billing calls lookup_order {\"order_id\":\"1234\"}",
			"billing: I can see two charges of 49.90 EUR",
			"── completed · last agent billing · 3 turns · 1 transfers",
		},
	},
	{
		name: "support_refunds",
		args: []string{"run", supportNet, "I want a refund for order 1234"},
		contains: []string{
			"⇒ transfer triage → refunds (transfer, history last_user): Customer asks for a refund",
			"  → refunds calls issue_refund {\"amount\":49.9,\"order_id\":\"1234\"}",
			"⏸ waiting for approval (interrupt run_ID-i",
			"  decide with: baton resume ../../examples/support/network.yaml --run run_ID --database sqlite:DB --decision approve|reject|edit",
			"── interrupted · last agent refunds",
		},
	},
	{
		name: "support_tech",
		args: []string{"run", supportNet, "The app crashes when I log in"},
		contains: []string{
			"⇒ transfer triage → tech (transfer, history full): App problem reported",
			"  ← check_status_page: {\"login\":\"degraded\",\"payments\":\"ok\"}",
			"tech: Log-in is degraded right now on our side",
			"── completed · last agent tech",
		},
	},
	{
		name:     "support_other",
		args:     []string{"run", supportNet, "Hello?"},
		contains: []string{"triage: I can help with billing, refunds or technical problems.", "── completed · last agent triage · 1 turns · 0 transfers"},
	},
	{
		name:     "support_agent_flag",
		args:     []string{"run", "--agent", "billing", supportNet, "Why two charges?"},
		contains: []string{"▶ billing is active", "── completed · last agent billing · 2 turns · 0 transfers"},
	},
	{
		name: "pipeline",
		args: []string{"run", pipelineNet, "How did EV sales develop in 2025?"},
		contains: []string{
			"  ← search_notes: [\"EV share of new cars: 18% (2024) -> 22% (2025)\"",
			"⇒ transfer research → analysis (sequential, history none): pipeline step research finished",
			"⇒ transfer analysis → report (sequential, history none): pipeline step analysis finished",
			"report: EV sales grew to 22% of new cars in 2025, up 4 points.",
			"── completed · last agent report · 4 turns · 2 transfers",
		},
	},
	{
		name: "rejected",
		args: []string{"run", "testdata/rejected.yaml", "I was charged twice"},
		contains: []string{
			"✗ transfer triage → billing rejected: invalid transfer context for billing: at /order_id: 'abc' does not match pattern '^[0-9]+$'",
			"  ← transfer_to_billing failed: invalid transfer context for billing",
			"⇒ transfer triage → billing (transfer, history last_user): Charged twice",
			"  ← lookup_order failed: invalid arguments for lookup_order: at /: missing property 'order_id'",
			"── completed · last agent billing",
		},
	},
	{
		name: "limit",
		args: []string{"run", "testdata/limit.yaml", "go"},
		code: 1,
		contains: []string{
			"✗ error (limit, limit max_turns): runner: limit max_turns reached (2) while looper was active",
			"── failed · last agent looper · 2 turns · 0 transfers",
		},
	},
}

func TestRunTranscript(t *testing.T) {
	t.Parallel()
	for _, tt := range transcriptCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit code %d, want %d; stderr:\n%s\nstdout:\n%s", code, tt.code, stderr, stdout)
			}
			if tt.code == 0 && stderr != "" {
				t.Errorf("stderr: %s", stderr)
			}
			got := normalise(stdout)
			for _, line := range tt.contains {
				if !strings.Contains(got, line) {
					t.Errorf("transcript lacks %q", line)
				}
			}
			if !strings.HasPrefix(got, "── run run_ID · thread THREAD_ID · network ") {
				t.Errorf("transcript starts with %q", strings.SplitN(got, "\n", 2)[0])
			}
			golden(t, tt.name, got)
		})
	}
}

// requiredFields are the fields each event type of `baton run --json` must
// have.
var requiredFields = map[string][]string{
	"run_start":         {"run_id", "thread_id", "network", "fingerprint", "agent"},
	"agent_start":       {"agent"},
	"text_delta":        {"agent", "delta"},
	"message":           {"agent", "text"},
	"tool_call":         {"agent", "name", "id", "arguments"},
	"tool_result":       {"agent", "name", "id"},
	"transfer":          {"transfer_id", "from", "to", "history_policy", "transfer_type", "reason"},
	"transfer_rejected": {"from", "to", "tool", "error"},
	"interrupt":         {"interrupt"},
	"run_end":           {"status", "last_agent", "turns", "transfers", "usage"},
	"error":             {"kind", "message"},
}

func TestRunJSON(t *testing.T) {
	t.Parallel()
	for _, tt := range transcriptCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// --json after the positional arguments works too.
			args := append(append([]string{}, tt.args...), "--json")
			code, stdout, stderr := runCLI(t, args...)
			if code != tt.code {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			events := decodeEvents(t, stdout)
			if len(events) < 3 {
				t.Fatalf("%d events", len(events))
			}
			if first, last := events[0]["type"], events[len(events)-1]["type"]; first != "run_start" || last != "run_end" {
				t.Errorf("events run from %v to %v, want run_start to run_end", first, last)
			}
			toolCalls := map[string]bool{}
			for i, ev := range events {
				typ, _ := ev["type"].(string)
				need, known := requiredFields[typ]
				if !known {
					t.Errorf("event %d: unknown type %q", i, typ)
					continue
				}
				for _, f := range need {
					if _, ok := ev[f]; !ok {
						t.Errorf("event %d (%s) lacks %q: %v", i, typ, f, ev)
					}
				}
				switch typ {
				case "tool_call":
					toolCalls[ev["id"].(string)] = true
					if _, ok := ev["arguments"].(map[string]any); !ok {
						t.Errorf("event %d: arguments are not an object: %v", i, ev["arguments"])
					}
				case "tool_result":
					_, hasOut := ev["output"]
					_, hasErr := ev["error"]
					if hasOut == hasErr {
						t.Errorf("event %d: want output or error: %v", i, ev)
					}
					if !toolCalls[ev["id"].(string)] {
						t.Errorf("event %d: result of no call: %v", i, ev)
					}
				case "transfer":
					// A model's transfer names its tool and carries the
					// context it filled; a pipeline step has neither.
					if ev["transfer_type"] == "transfer" {
						for _, f := range []string{"tool", "context"} {
							if _, ok := ev[f]; !ok {
								t.Errorf("event %d: transfer lacks %q: %v", i, f, ev)
							}
						}
					}
				case "run_end":
					if _, ok := ev["usage"].(map[string]any)["input_tokens"]; !ok {
						t.Errorf("event %d: usage %v", i, ev["usage"])
					}
				}
			}
			// Each scenario shows the events it is about.
			want := map[string][]string{
				"support_billing": {"text_delta", "message", "tool_call", "tool_result", "transfer"},
				"support_refunds": {"transfer", "interrupt"},
				"pipeline":        {"transfer", "message"},
				"rejected":        {"transfer_rejected", "transfer"},
				"limit":           {"error"},
			}[tt.name]
			for _, typ := range want {
				if !hasType(events, typ) {
					t.Errorf("no %s event", typ)
				}
			}
			if tt.name == "limit" {
				ev := eventOf(events, "error")
				if ev["kind"] != "limit" || ev["limit"] != "max_turns" {
					t.Errorf("error event %v, want kind limit and limit max_turns", ev)
				}
			}
			if tt.name == "support_billing" {
				ev := eventOf(events, "transfer")
				if ev["from"] != "triage" || ev["to"] != "billing" || ev["tool"] != "transfer_to_billing" || ev["history_policy"] != "full" ||
					ev["reason"] != "Customer reports being charged twice for order 1234" || ev["context"].(map[string]any)["order_id"] != "1234" {
					t.Errorf("transfer event %v", ev)
				}
				end := events[len(events)-1]
				if end["status"] != "completed" || end["last_agent"] != "billing" || end["turns"] != 3.0 || end["transfers"] != 1.0 {
					t.Errorf("run_end %v", end)
				}
			}
		})
	}
}

// decodeEvents checks that every line of out is one JSON object with a type
// and a seq, seq strictly increasing from 1, and returns the objects.
func decodeEvents(t *testing.T, out string) []map[string]any {
	t.Helper()
	var events []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	prev := 0
	for n := 1; sc.Scan(); n++ {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %d is not a JSON object: %v\n%s", n, err, sc.Text())
		}
		typ, ok := ev["type"].(string)
		if !ok || typ == "" {
			t.Errorf("line %d has no type: %s", n, sc.Text())
		}
		seq, ok := ev["seq"].(float64)
		switch {
		case !ok:
			t.Errorf("line %d has no seq: %s", n, sc.Text())
		case n == 1 && seq != 1:
			t.Errorf("first seq is %v, want 1", seq)
		case int(seq) <= prev:
			t.Errorf("line %d: seq %v after %d", n, seq, prev)
		}
		prev = int(seq)
		events = append(events, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

func hasType(events []map[string]any, typ string) bool { return eventOf(events, typ) != nil }

func eventOf(events []map[string]any, typ string) map[string]any {
	for _, ev := range events {
		if ev["type"] == typ {
			return ev
		}
	}
	return nil
}

func TestRunJSONRunStart(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runCLI(t, "run", "--json", supportNet, "I was charged twice for order 1234")
	if code != 0 {
		t.Fatalf("exit code %d", code)
	}
	ev := decodeEvents(t, stdout)[0]
	if id, _ := ev["run_id"].(string); !runIDPattern.MatchString(id) {
		t.Errorf("run_id %v", ev["run_id"])
	}
	if id, _ := ev["thread_id"].(string); !threadIDPattern.MatchString(id) {
		t.Errorf("thread_id %v", ev["thread_id"])
	}
	if fp, _ := ev["fingerprint"].(string); !fingerprintPattern.MatchString(fp) || ev["network"] != "support" || ev["agent"] != "triage" {
		t.Errorf("run_start %v", ev)
	}
	// The fingerprint is the one `baton validate` reports.
	_, out, _ := runCLI(t, "validate", supportNet)
	if !strings.Contains(out, ev["fingerprint"].(string)) {
		t.Errorf("validate says %q, run says fingerprint %v", out, ev["fingerprint"])
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		// stderr must contain each of these.
		stderr []string
	}{
		{"NoArguments", nil, []string{"usage: baton COMMAND"}},
		{"UnknownCommand", []string{"serve-all"}, []string{`baton: unknown command "serve-all"`, "usage: baton COMMAND"}},
		{"RunMissingFile", []string{"run", "testdata/nope.yaml", "hi"}, []string{"baton run: netspec: open testdata/nope.yaml: no such file or directory"}},
		{"RunBadYAML", []string{"run", "testdata/badyaml.yaml", "hi"}, []string{"baton run: testdata/badyaml.yaml:6: ',' or ']' must be specified"}},
		{"RunUnknownAgent", []string{"run", "testdata/unknown_agent.yaml", "hi"}, []string{`baton run: testdata/unknown_agent.yaml:9: unknown agent "billng" (agents: billing, triage)`}},
		{"RunInvalidSchema", []string{"run", "testdata/invalid_schema.yaml", "hi"}, []string{"baton run: testdata/invalid_schema.yaml:7: invalid JSON Schema at /properties/order_id/type"}},
		{"RunNoMessage", []string{"run", supportNet}, []string{`baton run: want a network file and a message: baton run NETWORK.yaml "message"`}},
		{"RunNoArguments", []string{"run"}, []string{"baton run: want a network file and a message"}},
		{"RunTooManyArguments", []string{"run", supportNet, "a", "b"}, []string{"baton run: want a network file and a message"}},
		{"RunUnknownAgentFlag", []string{"run", "--agent", "sales", supportNet, "hi"}, []string{`baton run: unknown agent "sales"`}},
		{"RunUnknownFlag", []string{"run", "--jsn", supportNet, "hi"}, []string{"flag provided but not defined: -jsn"}},
		{"RunEmptyMessage", []string{"run", supportNet, ""}, []string{"baton run: runner: user_input"}},
		{"RunWebhookRefused", []string{"run", "--webhook", "http://169.254.169.254/latest", "--webhook-secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", supportNet, "hi"},
			[]string{"webhook: URL refused", "169.254.169.254"}},
		{"RunWebhookNoSecret", []string{"run", "--webhook", "https://hooks.example.com/x", "--webhook-secret", "", supportNet, "hi"},
			[]string{"webhook: configuration: a secret is required"}},
		{"RunWebhookBadSecret", []string{"run", "--webhook", "https://hooks.example.com/x", "--webhook-secret", "whsec_short", supportNet, "hi"},
			[]string{"webhook: configuration: the secret must be whsec_"}},
		{"RunWebhookRetentionNegative", []string{"run", "--webhook-retention", "-1h", supportNet, "hi"}, []string{"webhook-retention"}},
		{"RunWebhookRetentionBad", []string{"run", "--webhook-retention", "7 days", supportNet, "hi"}, []string{"webhook-retention"}},
		{"ValidateNoFile", []string{"validate"}, []string{"baton validate: want one network file: baton validate NETWORK.yaml"}},
		{"ValidateTwoFiles", []string{"validate", supportNet, pipelineNet}, []string{"baton validate: want one network file"}},
		{"ValidateMissingFile", []string{"validate", "testdata/nope.yaml"}, []string{"baton validate: netspec: open testdata/nope.yaml: no such file or directory"}},
		{"ValidateDirectory", []string{"validate", "testdata"}, []string{"baton validate: netspec: read testdata: is a directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, exitUsage, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout: %s", stdout)
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
		})
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"help", "-h", "--help"} {
		code, _, stderr := runCLI(t, arg)
		if code != 0 || !strings.Contains(stderr, "  run ") || !strings.Contains(stderr, "  validate ") {
			t.Errorf("%s: exit code %d, stderr:\n%s", arg, code, stderr)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	t.Run("Examples", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct{ path, want string }{
			{supportNet, "network support is valid: 4 agents, fingerprint "},
			{pipelineNet, "network pipeline is valid: 3 agents, fingerprint "},
			{"testdata/rejected.yaml", "network rejected is valid: 2 agents"},
		} {
			code, stdout, stderr := runCLI(t, "validate", c.path)
			if code != 0 || stderr != "" || !strings.HasPrefix(stdout, c.path+": "+c.want) {
				t.Errorf("validate %s: exit code %d, stdout %q, stderr %q", c.path, code, stdout, stderr)
			}
		}
	})
	t.Run("EveryProblem", func(t *testing.T) {
		t.Parallel()
		code, stdout, stderr := runCLI(t, "validate", "testdata/invalid.yaml")
		if code != exitUsage || stdout != "" {
			t.Fatalf("exit code %d, stdout %q", code, stdout)
		}
		// One line per problem, each with its line number, in line order.
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		re := regexp.MustCompile(`^(baton validate: )?testdata/invalid\.yaml:([0-9]+): \S`)
		prev := 0
		for _, l := range lines {
			m := re.FindStringSubmatch(l)
			if m == nil {
				t.Errorf("line without file and line number: %q", l)
				continue
			}
			n := 0
			for _, c := range m[2] {
				n = n*10 + int(c-'0')
			}
			if n < prev {
				t.Errorf("line %d reported after line %d", n, prev)
			}
			prev = n
		}
		if len(lines) < 8 {
			t.Errorf("%d problems reported, want every one", len(lines))
		}
		golden(t, "validate_invalid", stderr)
	})
}

// TestBinaryDemo builds the baton binary and runs the demo command of the
// README (or, until the README has one, of examples/support/network.yaml),
// as a user would.
func TestBinaryDemo(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	bin := batonBinary(t)
	args := demoArgs(t)
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Dir = filepath.Join("..", "..")
	// The demo stores its thread in a database of its own, not the user's.
	cmd.Env = append(os.Environ(), "BATON_DATABASE_URL=sqlite:"+filepath.Join(t.TempDir(), "baton.db"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("baton %s: %v\nstderr:\n%s\nstdout:\n%s", strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	out := stdout.String()
	for _, want := range []string{"⇒ transfer triage → billing", "▶ billing is active", "── completed · last agent billing"} {
		if !strings.Contains(out, want) {
			t.Errorf("transcript lacks %q:\n%s", want, out)
		}
	}
}

// demoArgs returns the arguments of the first `baton run` command on the
// support example in README.md.
func demoArgs(t *testing.T) []string {
	t.Helper()
	fallback := []string{"run", "examples/support/network.yaml", "I was charged twice for order 1234"}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Logf("no README.md (%v): running %q", err, fallback)
		return fallback
	}
	for _, line := range strings.Split(string(readme), "\n") {
		_, cmd, ok := strings.Cut(line, "baton run ")
		if !ok || !strings.Contains(cmd, "examples/support/network.yaml") {
			continue
		}
		args := append([]string{"run"}, splitArgs(cmd)...)
		t.Logf("README demo: baton %q", args)
		return args
	}
	t.Logf("README.md has no `baton run examples/support/network.yaml` command: running %q", fallback)
	return fallback
}

// splitArgs splits a shell command line on spaces, keeping quoted text
// together and stopping at a comment or the end of a code span.
func splitArgs(s string) []string {
	var args []string
	var cur strings.Builder
	quote, inArg := rune(0), false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inArg = r, true
		case r == '`' || r == '#':
			if inArg {
				args = append(args, cur.String())
			}
			return args
		case r == ' ' || r == '\t':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteRune(r)
			inArg = true
		}
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args
}

func TestSplitArgs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want []string
	}{
		{`examples/support/network.yaml "I was charged twice for order 1234"`, []string{"examples/support/network.yaml", "I was charged twice for order 1234"}},
		{`--json examples/support/network.yaml 'a b'` + "` and more", []string{"--json", "examples/support/network.yaml", "a b"}},
		{`x  y # comment`, []string{"x", "y"}},
		{`x ""`, []string{"x", ""}},
	} {
		if got := splitArgs(c.in); strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
			t.Errorf("splitArgs(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestWebhookSecretHidden checks that --webhook-secret's usage never
// prints the secret of $BATON_WEBHOOK_SECRET: neither --help nor the usage
// of a flag typo, while the variable is still the flag's default.
func TestWebhookSecretHidden(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	t.Setenv("BATON_WEBHOOK_SECRET", secret)
	for _, args := range [][]string{{"serve", "--help"}, {"worker", "--help"}, {"run", "--help"}, {"serve", "--webhok", "x"}} {
		_, stdout, stderr := runCLI(t, args...)
		if !strings.Contains(stdout+stderr, "webhook-secret") {
			t.Errorf("%v: the usage does not list --webhook-secret:\n%s%s", args, stdout, stderr)
		}
		if strings.Contains(stdout+stderr, "MfKQ9r8") {
			t.Errorf("%v: the usage shows the secret:\n%s%s", args, stdout, stderr)
		}
	}
	// The variable is still the default: a run with --webhook and no
	// --webhook-secret is not refused for want of a secret, but for the
	// URL.
	code, _, stderr := runCLI(t, "run", "--webhook", "http://169.254.169.254/latest", supportNet, "hi")
	if code != exitUsage || !strings.Contains(stderr, "webhook: URL refused") {
		t.Errorf("run with $BATON_WEBHOOK_SECRET: exit %d, stderr:\n%s", code, stderr)
	}
	// An explicit empty flag still overrides the variable.
	code, _, stderr = runCLI(t, "run", "--webhook", "https://hooks.example.com/x", "--webhook-secret", "", supportNet, "hi")
	if code != exitUsage || !strings.Contains(stderr, "a secret is required") {
		t.Errorf("run with an empty --webhook-secret: exit %d, stderr:\n%s", code, stderr)
	}
}
