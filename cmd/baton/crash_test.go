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
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlitestore"
)

// TestCrashedRunResumesInANewProcess kills `baton run` with SIGKILL after
// its first checkpoints, resumes the run with `baton resume` in a new
// process, and checks that the stored thread equals an uninterrupted run's.
func TestCrashedRunResumesInANewProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the baton binary")
	}
	bin := filepath.Join(t.TempDir(), "baton")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	net := filepath.Join("testdata", "slow.yaml")
	dir := t.TempDir()
	clean := "sqlite:" + filepath.Join(dir, "clean.db")
	crash := "sqlite:" + filepath.Join(dir, "crash.db")

	if out, err := exec.Command(bin, "run", "--database", clean, net, "I was charged twice").CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}

	cmd := exec.Command(bin, "run", "--json", "--database", crash, net, "I was charged twice")
	// os/exec copies the output from a goroutine of its own while the test
	// polls it.
	var stdout logtest.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the transfer was emitted (so checkpointed), then kill.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stdout.String(), `"type":"transfer"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no transfer event before the deadline: %s", stdout.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	var start struct {
		RunID string `json:"run_id"`
	}
	first, _, _ := strings.Cut(stdout.String(), "\n")
	if err := json.Unmarshal([]byte(first), &start); err != nil || start.RunID == "" {
		t.Fatalf("run_start line %q: %v", first, err)
	}
	if strings.Contains(stdout.String(), `"type":"run_end"`) {
		t.Fatal("the run finished before it was killed; the test proves nothing")
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
	st, err := sqlitestore.Open(t.Context(), strings.TrimPrefix(url, "sqlite:"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
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

func TestMain(m *testing.M) {
	// Keep the CLI's default database out of the user's data directory.
	dir, err := os.MkdirTemp("", "baton-cmd-test")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_DATA_HOME", dir)
	os.Unsetenv("BATON_DATABASE_URL")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
