package memory_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/memory/memorytest"
)

func TestDirSuite(t *testing.T) {
	t.Parallel()
	memorytest.Run(t, func(t *testing.T) memory.Store { return &memory.Dir{Path: t.TempDir()} })
}

func TestMapSuite(t *testing.T) {
	t.Parallel()
	memorytest.Run(t, func(t *testing.T) memory.Store { return &memory.Map{} })
}

func TestDirFiles(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	root := t.TempDir()
	d := &memory.Dir{Path: root}
	file, err := d.File("../owner", ".hidden/agent")
	if err != nil {
		t.Fatal(err)
	}
	if rel, err := filepath.Rel(root, file); err != nil || strings.HasPrefix(rel, "..") || strings.Count(rel, string(filepath.Separator)) != 1 {
		t.Fatalf("file %s escapes or nests in %s", file, root)
	}
	if want := filepath.Join(root, "%2E.%2Fowner", "%2Ehidden%2Fagent.md"); file != want {
		t.Fatalf("File = %s; want %s", file, want)
	}
	v, err := d.Put(ctx, "o", "a", "hello\n", "")
	if err != nil {
		t.Fatal(err)
	}
	f, _ := d.File("o", "a")
	b, err := os.ReadFile(f)
	if err != nil || string(b) != "hello\n" {
		t.Fatalf("file holds %q, %v", b, err)
	}
	if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v; want 0600", fi.Mode().Perm())
	}
	// A hand edit between read and write is a conflict, not overwritten.
	if err := os.WriteFile(f, []byte("hand edit\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var ce *memory.ConflictError
	if _, err := d.Put(ctx, "o", "a", "mine\n", v); !errors.As(err, &ce) || ce.Actual == v {
		t.Fatalf("write over a hand edit: %v", err)
	}
	if b, _ := os.ReadFile(f); string(b) != "hand edit\n" {
		t.Fatalf("hand edit lost: %q", b)
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(filepath.Dir(f))
	for _, e := range entries {
		if e.Name() != "a.md" && e.Name() != ".lock" {
			t.Fatalf("left behind: %s", e.Name())
		}
	}
	if _, err := (&memory.Dir{}).Get(ctx, "o", "a"); !errors.Is(err, memory.ErrInvalid) {
		t.Fatalf("Dir without a path: %v", err)
	}
}

// TestDirTwoProcesses runs writers in two processes against one directory:
// every append survives exactly once.
func TestDirTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Parallel()
	dir := t.TempDir()
	const perProc = 15
	var cmds []*exec.Cmd
	for p := range 2 {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestDirHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MEMORY_HELPER_DIR="+dir, fmt.Sprintf("MEMORY_HELPER_ID=%d", p), fmt.Sprintf("MEMORY_HELPER_N=%d", perProc))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("helper: %v", err)
		}
	}
	doc, err := (&memory.Dir{Path: dir}).Get(t.Context(), "o", "a")
	if err != nil {
		t.Fatal(err)
	}
	for p := range 2 {
		for i := range perProc {
			if c := strings.Count(doc.Content, fmt.Sprintf("p%d-%d\n", p, i)); c != 1 {
				t.Fatalf("p%d-%d appears %d times", p, i, c)
			}
		}
	}
}

func TestDirHelperProcess(t *testing.T) {
	dir := os.Getenv("MEMORY_HELPER_DIR")
	if dir == "" {
		t.Skip("helper process")
	}
	var n int
	fmt.Sscan(os.Getenv("MEMORY_HELPER_N"), &n)
	d := &memory.Dir{Path: dir}
	for i := range n {
		line := fmt.Sprintf("p%s-%d\n", os.Getenv("MEMORY_HELPER_ID"), i)
		if _, _, err := memory.Update(t.Context(), d, "o", "a", 10000, func(c string) (string, bool, error) {
			return c + line, true, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}
