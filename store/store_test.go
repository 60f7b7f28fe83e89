package store_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

func TestDefaultSQLitePath(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("XDG layout is tested on Linux")
	}
	t.Setenv("XDG_DATA_HOME", "/data/xdg")
	if p, err := store.DefaultSQLitePath(); err != nil || p != "/data/xdg/baton/baton.db" {
		t.Fatalf("with XDG_DATA_HOME: %q, %v", p, err)
	}
	t.Setenv("XDG_DATA_HOME", "relative/ignored")
	t.Setenv("HOME", "/home/u")
	if p, err := store.DefaultSQLitePath(); err != nil || p != filepath.Join("/home/u", ".local", "share", "baton", "baton.db") {
		t.Fatalf("without XDG_DATA_HOME: %q, %v", p, err)
	}
}

func TestAPIKeyHelpers(t *testing.T) {
	t.Parallel()
	// echo -n secret | sha256sum
	if got := store.HashAPIKey("secret"); got != "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b" {
		t.Fatalf("HashAPIKey = %s", got)
	}
	a, b := store.NewAPIKeySecret(), store.NewAPIKeySecret()
	if a == b || !strings.HasPrefix(a, store.APIKeySecretPrefix) || len(a) != len(store.APIKeySecretPrefix)+43 {
		t.Fatalf("NewAPIKeySecret = %q, %q", a, b)
	}
	if p := store.APIKeyPrefix(a); p != a[:store.APIKeyPrefixLen] {
		t.Fatalf("APIKeyPrefix = %q", p)
	}
	if p := store.APIKeyPrefix("short"); p != "sh" {
		t.Fatalf("APIKeyPrefix(short) = %q", p)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err     error
		targets []error
	}{
		{&store.StaleWriteError{RunID: "r"}, []error{store.ErrConflict}},
		{&store.VersionConflictError{Kind: "thread"}, []error{store.ErrConflict}},
		{&store.TransitionError{Kind: "job run"}, []error{store.ErrConflict}},
		{&store.SchemaVersionError{Current: 1, Required: 4}, []error{store.ErrSchemaVersion}},
		{&store.CorruptError{Table: "checkpoints", Err: fmt.Errorf("%w: x", runstate.ErrCorrupt)}, []error{store.ErrCorrupt, runstate.ErrCorrupt}},
		{&runstate.IncompatibleError{}, []error{store.ErrIncompatible, runstate.ErrIncompatible}},
		{fmt.Errorf("get: %w", store.ErrIncompatible), []error{runstate.ErrIncompatible}},
	} {
		wrapped := fmt.Errorf("op: %w", tc.err)
		for _, target := range tc.targets {
			if !errors.Is(wrapped, target) {
				t.Errorf("%T: errors.Is(%v) = false", tc.err, target)
			}
		}
		if msg := tc.err.Error(); !strings.HasPrefix(msg, "store: ") && !strings.HasPrefix(msg, "runstate: ") && !strings.HasPrefix(msg, "get: ") {
			t.Errorf("%T: message %q lacks a package prefix", tc.err, msg)
		}
	}
	if errors.Is(&store.StaleWriteError{}, store.ErrNotFound) {
		t.Error("StaleWriteError is ErrNotFound")
	}
	for _, s := range []error{store.ErrNotFound, store.ErrConflict, store.ErrUnavailable, store.ErrCorrupt, store.ErrInvalid, store.ErrSchemaVersion} {
		if !strings.HasPrefix(s.Error(), "store: ") {
			t.Errorf("sentinel %q lacks the package prefix", s)
		}
	}
}

func TestJobStatusMoves(t *testing.T) {
	t.Parallel()
	all := []store.JobStatus{store.JobQueued, store.JobProcessing, store.JobCompleted, store.JobError, store.JobCanceled}
	allowed := map[store.JobStatus][]store.JobStatus{
		store.JobQueued:     {store.JobProcessing, store.JobCanceled},
		store.JobProcessing: all,
		store.JobError:      {store.JobQueued, store.JobProcessing, store.JobCanceled},
	}
	for _, from := range all {
		for _, to := range all {
			want := false
			for _, a := range allowed[from] {
				want = want || a == to
			}
			if got := from.CanMoveTo(to); got != want {
				t.Errorf("%s -> %s: %v, want %v", from, to, got, want)
			}
		}
		if store.JobStatus("running").CanMoveTo(from) || from.CanMoveTo("running") {
			t.Errorf("unknown status moves with %s", from)
		}
	}
}

// FuzzParseScopes checks that parsed scopes are valid, sorted least first,
// without duplicates, and that their stored form reads back the same.
func FuzzParseScopes(f *testing.F) {
	for _, s := range []string{"read", "run,decide", "admin read", "READ", "", "root", "read,,run", " decide\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sc, err := store.ParseScopes([]string{s})
		if err != nil {
			return
		}
		for i, x := range sc {
			if !x.Valid() || i > 0 && !x.Includes(sc[i-1]) || i > 0 && x == sc[i-1] {
				t.Fatalf("ParseScopes(%q) = %v: not valid, sorted and distinct", s, sc)
			}
		}
		if back := store.SplitScopes(store.JoinScopes(sc)); !slices.Equal(back, sc) {
			t.Fatalf("ParseScopes(%q) = %v; stored and read back: %v", s, sc, back)
		}
	})
}

func TestScopeIncludes(t *testing.T) {
	for _, tc := range []struct {
		have, need store.Scope
		want       bool
	}{
		{store.ScopeRead, store.ScopeRead, true},
		{store.ScopeRead, store.ScopeRun, false},
		{store.ScopeRun, store.ScopeRead, true},
		{store.ScopeDecide, store.ScopeRun, true},
		{store.ScopeDecide, store.ScopeAdmin, false},
		{store.ScopeAdmin, store.ScopeDecide, true},
		{"root", store.ScopeRead, false},
		{store.ScopeAdmin, "root", false},
	} {
		if got := tc.have.Includes(tc.need); got != tc.want {
			t.Errorf("%q.Includes(%q) = %v, want %v", tc.have, tc.need, got, tc.want)
		}
	}
}
