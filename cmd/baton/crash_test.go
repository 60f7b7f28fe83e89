package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/logtest"
	"github.com/batonhq/baton/internal/testbin"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/open"
)

// TestCrashedRunResumesInANewProcess kills `baton run` with SIGKILL after
// its first checkpoints, resumes the run with `baton resume` in a new
// process, and checks that the stored thread equals an uninterrupted run's.
func TestCrashedRunResumesInANewProcess(t *testing.T) {
	bin := batonBinary(t)
	net := filepath.Join("testdata", "slow.yaml")
	dir := t.TempDir()
	clean := "sqlite:" + filepath.Join(dir, "clean.db")
	crash := "sqlite:" + filepath.Join(dir, "crash.db")

	if out, err := exec.Command(bin, "run", "--database", clean, net, "I was charged twice").CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}

	stdout := killAfterTransfer(t, exec.Command(bin, "run", "--json", "--database", crash, net, "I was charged twice"), "the run", 20*time.Second)
	start, first, err := runStartOf(stdout)
	if err != nil || start.RunID == "" {
		t.Fatalf("run_start line %q: %v", first, err)
	}

	out, err := exec.Command(bin, "resume", "--database", crash, net, "--run", start.RunID).CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "completed") {
		t.Fatalf("resume output:\n%s", out)
	}
	if got, want := storedThread(t, crash), storedThread(t, clean); got != want {
		t.Errorf("resumed thread:\n%s\nwant (uninterrupted):\n%s", got, want)
	}
}

// storedThread renders the only thread of the local owner in a database.
func storedThread(t *testing.T, url string) string {
	t.Helper()
	st := openTestStore(t, url)
	page, err := st.ListThreads(t.Context(), &store.ListThreadsParams{OwnerID: "local"})
	if err != nil || len(page.Threads) != 1 {
		t.Fatalf("threads: %v (%d)", err, len(page.Threads))
	}
	th := page.Threads[0]
	msgs, err := st.ListMessages(t.Context(), &store.ListMessagesParams{OwnerID: "local", ThreadID: th.ID})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("active " + th.ActiveAgent + "\n")
	for _, m := range msgs {
		b.WriteString(string(m.Role) + "/" + m.Agent + "/" + string(m.Status) + ": " + m.Text())
		for _, p := range m.Parts {
			if p.CallID != "" {
				b.WriteString(" [" + p.CallID + " " + p.Name + " " + string(p.Arguments) + p.Text + "]")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// testDir is the directory TestMain makes for the test binary: the CLI's
// data directory and the built baton binary.
var testDir string

func TestMain(m *testing.M) {
	// Keep the CLI's default database out of the user's data directory.
	dir, err := os.MkdirTemp("", "baton-cmd-test")
	if err != nil {
		panic(err)
	}
	testDir = dir
	os.Setenv("XDG_DATA_HOME", dir)
	os.Unsetenv("BATON_DATABASE_URL")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// baton is this package's command, built for the tests that run it as a
// process.
var baton = testbin.Build{Pkg: "."}

// batonBinary returns the baton binary, built once for the test binary on
// first use. It skips the test under -short.
func batonBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds and runs the baton binary")
	}
	return baton.Path(t, testDir, "baton")
}

// killAfterTransfer starts cmd, a `baton run --json` (what names its run in
// failures), waits up to within for its transfer event — by then the
// transfer is checkpointed — and SIGKILLs it 100ms later. It returns what
// the run printed; the run must not have ended before the kill.
func killAfterTransfer(t *testing.T, cmd *exec.Cmd, what string, within time.Duration) string {
	t.Helper()
	// os/exec copies the output from a goroutine of its own while the test
	// polls it.
	var stdout, stderr logtest.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(within)
	for !strings.Contains(stdout.String(), `"type":"transfer"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no transfer event of %s before the deadline: %s %s", what, stdout.String(), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if strings.Contains(stdout.String(), `"type":"run_end"`) {
		t.Fatalf("%s finished before it was killed; the test proves nothing", what)
	}
	return stdout.String()
}

// openTestStore opens the store at url as the commands do (store/open),
// for a test to read what they stored; it is closed when the test ends.
func openTestStore(t *testing.T, url string) store.Store {
	t.Helper()
	st, err := open.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// runStart is what the tests read of a run_start event.
type runStart struct {
	RunID    string `json:"run_id"`
	ThreadID string `json:"thread_id"`
}

// runStartOf decodes the first line of `baton run --json`'s output, its
// run_start event, and returns the event and the line.
func runStartOf(stdout string) (runStart, string, error) {
	var start runStart
	first, _, _ := strings.Cut(stdout, "\n")
	err := json.Unmarshal([]byte(first), &start)
	return start, first, err
}
