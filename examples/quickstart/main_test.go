package main

import (
	"io"
	"os"
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

// The program runs as written from the repository's root, prints a
// readable answer on standard output and nothing on standard error: the
// library is quiet unless given a logger.
func TestQuickstart(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	t.Setenv("BATON_MODEL", "")
	stdout, stderr := capture(t, main)
	want := "billing, completed after 1 transfer(s):\nI can see two charges of 49.90 EUR on order 1234. The second one is a duplicate; I have flagged it and it will be reversed within 3-5 days.\n"
	if stdout != want || stderr != "" {
		t.Errorf("stdout:\n%s\nwant:\n%s\nstderr:\n%s", stdout, want, stderr)
	}
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
