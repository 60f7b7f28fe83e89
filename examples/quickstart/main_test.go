package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The README's Go snippet is this program, quoted whole.
func TestREADMEQuotesIt(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```go\n"+string(src)+"```\n") {
		t.Errorf("README.md does not quote examples/quickstart/main.go verbatim in a ```go block")
	}
}

// answer is what the program prints: the answer alone.
const answer = "I can see two charges of 49.90 EUR on order 1234; the second one is a duplicate and will be reversed.\n"

// The program prints the answer on standard output and nothing on
// standard error: the library is quiet unless given a logger.
func TestQuickstart(t *testing.T) {
	stdout, stderr := capture(t, main)
	if stdout != answer || stderr != "" {
		t.Errorf("stdout:\n%s\nwant:\n%s\nstderr:\n%s", stdout, answer, stderr)
	}
}

// The README's snippet, taken from README.md itself, compiles and runs in
// a new module that requires baton (replaced by this checkout, as a
// released version would be fetched by go get): it needs no file of the
// repository and no network access of its own, and prints the answer.
func TestREADMESnippetInNewModule(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a new module with the go command")
	}
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	snippet, err := goBlock(string(readme), "### In a Go program")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module example.com/snippet\n\ngo 1.26\n\nrequire github.com/batonhq/baton v0.0.0\n\nreplace github.com/batonhq/baton => " + root + "\n"
	for name, data := range map[string]string{"go.mod": gomod, "main.go": snippet} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gocmd := func(args ...string) (stdout, stderr string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "go", args...)
		cmd.Dir = dir
		// The new module alone: no workspace, no flags of the caller's.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
		}
		return out.String(), errOut.String()
	}
	gocmd("mod", "tidy")
	// go run's own messages (downloads) go to stderr: the program's
	// output is stdout.
	if stdout, _ := gocmd("run", "."); stdout != answer {
		t.Errorf("the snippet printed:\n%s\nwant:\n%s", stdout, answer)
	}
}

// goBlock returns the first ```go block after heading in a Markdown text.
func goBlock(md, heading string) (string, error) {
	_, after, ok := strings.Cut(md, "\n"+heading+"\n")
	if !ok {
		return "", fmt.Errorf("no heading %q", heading)
	}
	_, block, ok := strings.Cut(after, "\n```go\n")
	if !ok {
		return "", fmt.Errorf("no ```go block after %q", heading)
	}
	code, _, ok := strings.Cut(block, "\n```\n")
	if !ok {
		return "", fmt.Errorf("the ```go block after %q does not end", heading)
	}
	return code + "\n", nil
}

// capture runs f with os.Stdout and os.Stderr read into strings.
func capture(t *testing.T, f func()) (stdout, stderr string) {
	t.Helper()
	read := func(dst **os.File) (func() string, func()) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		old := *dst
		*dst = w
		done := make(chan string)
		go func() {
			b, _ := io.ReadAll(r)
			done <- string(b)
		}()
		return func() string { w.Close(); return <-done }, func() { *dst = old }
	}
	outText, outRestore := read(&os.Stdout)
	errText, errRestore := read(&os.Stderr)
	f()
	outRestore()
	errRestore()
	return outText(), errText()
}
