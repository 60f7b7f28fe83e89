package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/store"
	"github.com/jackc/pgx/v5"
)

// FuzzParseForkPoint: what parseForkPoint accepts is THREAD@POINT again,
// both sides without '@', spaces or control characters.
func FuzzParseForkPoint(f *testing.F) {
	for _, s := range []string{"01a2-b@01a3-c", "t@run_x-m3", "@p", "t@", "t@p@q", "t @p", "t@p\x00", "\xff@p", "", "@", strings.Repeat("a", 300) + "@p"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		thread, point, err := parseForkPoint(s)
		if err != nil {
			return
		}
		if thread+"@"+point != s || thread == "" || point == "" || strings.Contains(point, "@") || len(thread) > maxForkID || len(point) > maxForkID {
			t.Fatalf("parseForkPoint(%q) = %q, %q", s, thread, point)
		}
		for _, r := range thread + point {
			if r == ' ' || r < 0x20 || r == 0xFFFD {
				t.Fatalf("parseForkPoint(%q) accepted %q", s, r)
			}
		}
	})
}

// TestRunFork: baton run --fork THREAD@POINT forks a stored thread: at the
// checkpoint where a run waits for an approval, the fork waits for its own
// decision and baton resume gives it; at the first message, edited, a run
// on the fork goes where the edited message leads. Bad forms are usage
// errors. SQLite and PostgreSQL.
func TestRunFork(t *testing.T) {
	t.Parallel()
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		runFork(t, "sqlite:"+filepath.Join(t.TempDir(), "baton.db"))
	})
	t.Run("Postgres", func(t *testing.T) {
		t.Parallel()
		runFork(t, postgresSchema(t))
	})
}

func runFork(t *testing.T, db string) {
	net := filepath.Join("..", "..", "examples", "support", "network.yaml")
	code, out, errOut := runCLI(t, "run", "--database", db, net, "I want a refund for order 1234")
	if code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	run := regexp.MustCompile(`run_[a-z0-9]{20,}`).FindString(out)
	code, out, errOut = runCLI(t, "inspect", "--database", db, "--json", run)
	if code != 0 {
		t.Fatalf("inspect: %d %s", code, errOut)
	}
	thread := regexp.MustCompile(`"thread_id": "([^"]+)"`).FindStringSubmatch(out)[1]
	cp := regexp.MustCompile(`"checkpoint_id": "([^"]+)"`).FindStringSubmatch(out)[1] // the run's latest: the approval

	code, out, errOut = runCLI(t, "run", "--database", db, net, "--fork", thread+"@"+cp)
	if code != 0 || !strings.Contains(out, "waits for a decision") || !strings.Contains(errOut, "forked thread "+thread) {
		t.Fatalf("fork at the approval: %d %s %s", code, out, errOut)
	}
	forkRun := regexp.MustCompile(`run (run_[a-z0-9]{20,}) waits`).FindStringSubmatch(out)[1]
	if forkRun == run {
		t.Fatal("the fork's run is the source's")
	}
	if code, out, errOut := runCLI(t, "resume", "--database", db, net, "--run", forkRun, "--decision", "approve"); code != 0 || !strings.Contains(out, "completed") {
		t.Fatalf("resume the fork: %d %s %s", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "inspect", "--database", db, run); code != 0 || !strings.Contains(out, "interrupted") {
		t.Fatalf("the source after the fork's decision: %s", out)
	}
	code, out, errOut = runCLI(t, "run", "--database", db, net, "--fork", thread+"@"+run+"-m1", "--edit", "The app crashes when I log in", "It still does.")
	if code != 0 || !strings.Contains(out, "tech") || !strings.Contains(out, "completed") {
		t.Fatalf("run on an edited fork: %d %s %s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"--fork", "nope", "x"}, {"--fork", thread + "@", "x"}, {"--fork", thread + "@nope", "x"}, {"--fork", thread + "@" + cp, "--thread", thread, "x"},
		{"--edit", "x", "hi"},
	} {
		if code, _, errOut := runCLI(t, append([]string{"run", "--database", db, net}, args...)...); code != 2 {
			t.Errorf("run %v: %d %s, want a usage error", args, code, errOut)
		}
	}
}

// TestForkedRunResumesAfterSIGKILL: a run on a fork (baton run --fork),
// killed with SIGKILL after its transfer was checkpointed, resumes in a
// new process (baton resume) and completes on the fork; the source thread
// is unchanged. SQLite and PostgreSQL.
func TestForkedRunResumesAfterSIGKILL(t *testing.T) {
	t.Parallel()
	bin := batonBinary(t)
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		forkedRunAfterKill(t, bin, "sqlite:"+filepath.Join(t.TempDir(), "baton.db"))
	})
	t.Run("Postgres", func(t *testing.T) {
		t.Parallel()
		forkedRunAfterKill(t, bin, postgresSchema(t))
	})
}

// postgresSchema returns the test database's URL (testdb.URL; the test is
// skipped without one) with search_path set to a new schema of the test.
func postgresSchema(t *testing.T) string {
	t.Helper()
	u := testdb.URL(t)
	schema := testdb.Schema(t, u)
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(t.Context(), "CREATE SCHEMA "+schema)
	conn.Close(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "search_path=" + schema
}

func forkedRunAfterKill(t *testing.T, bin, db string) {
	net := filepath.Join("testdata", "slow.yaml")
	out, err := exec.Command(bin, "run", "--json", "--database", db, net, "I was charged twice").CombinedOutput()
	if err != nil {
		t.Fatalf("source run: %v\n%s", err, out)
	}
	start, first, err := runStartOf(string(out))
	if err != nil || start.ThreadID == "" {
		t.Fatalf("run_start %q: %v", first, err)
	}
	// A second run: the first is no longer the source's latest, so the fork
	// shares its rows instead of copying them. It fails (triage's script
	// has one step, spent by the first run); that it ran is what counts.
	if out, _ := exec.Command(bin, "run", "--database", db, net, "--thread", start.ThreadID, "Any news?").CombinedOutput(); !strings.Contains(string(out), "── run run_") || strings.Contains(string(out), start.RunID) {
		t.Fatalf("the source's second run:\n%s", out)
	}
	source := threadText(t, db, start.ThreadID)
	sourceIDs := messageIDs(t, db, start.ThreadID)

	stdout := killAfterTransfer(t, exec.Command(bin, "run", "--json", "--database", db, net, "--fork", start.ThreadID+"@"+start.RunID+"-m1", "Please check again"), "the fork's run", 30*time.Second)
	forkStart, first, err := runStartOf(stdout)
	if err != nil || forkStart.ThreadID == start.ThreadID {
		t.Fatalf("the fork's run_start %q: %v", first, err)
	}
	out, err = exec.Command(bin, "resume", "--database", db, net, "--run", forkStart.RunID).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "completed") {
		t.Fatalf("resume the fork's run: %v\n%s", err, out)
	}
	// The fork reads its first message through the source: the source's
	// row, with its id; a copy would have a new one.
	if ids := messageIDs(t, db, forkStart.ThreadID); len(ids) < 2 || len(sourceIDs) < 2 || ids[0] != sourceIDs[0] || ids[1] == sourceIDs[1] {
		t.Errorf("the fork's message ids %v, the source's %v: want the first shared", ids, sourceIDs)
	}
	got := threadText(t, db, forkStart.ThreadID)
	want := "user: I was charged twice\nuser: Please check again\n"
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "assistant: The duplicate charge on order 1234 will be reversed.\n") {
		t.Errorf("the fork after the resume:\n%s", got)
	}
	if after := threadText(t, db, start.ThreadID); after != source {
		t.Errorf("the source changed:\n%s\nwas:\n%s", after, source)
	}
}

// threadText renders a thread of the local owner: role and text per message.
func threadText(t *testing.T, db, thread string) string {
	t.Helper()
	var b strings.Builder
	for _, m := range threadMessages(t, db, thread) {
		if m.Text() != "" {
			b.WriteString(string(m.Role) + ": " + m.Text() + "\n")
		}
	}
	return b.String()
}

// FuzzParseRetention: --inspect-retention accepts whole days or a Go
// duration, never a negative one, and a value it accepts reads back the
// same through the flag's String.
func FuzzParseRetention(f *testing.F) {
	for _, s := range []string{"7d", "0", "0d", "36h", "90m", "1h30m", "-1h", "d", "7dd", "1.5d", "99999999999999999999d", "36500d", "36501d", "", " 7d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseRetention(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("parseRetention(%q) = %v", s, d)
		}
		r := retention(d)
		again, err := parseRetention(r.String())
		if err != nil || again != d {
			t.Fatalf("parseRetention(%q) = %v, String %q reads %v, %v", s, d, r.String(), again, err)
		}
	})
}

// messageIDs returns the ids of a thread's messages of the local owner, in order.
func messageIDs(t *testing.T, db, thread string) []string {
	t.Helper()
	var ids []string
	for _, m := range threadMessages(t, db, thread) {
		ids = append(ids, m.ID)
	}
	return ids
}

// threadMessages lists a thread's messages of the local owner.
func threadMessages(t *testing.T, db, thread string) []*store.Message {
	t.Helper()
	st := openTestStore(t, db)
	msgs, err := st.ListMessages(t.Context(), &store.ListMessagesParams{OwnerID: "local", ThreadID: thread})
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}
