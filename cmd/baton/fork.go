package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// maxForkID bounds each side of THREAD@POINT.
const maxForkID = 256

// parseForkPoint parses --fork's THREAD@POINT: a thread id and a checkpoint
// or message id, each 1 to 256 bytes without '@', spaces or control
// characters.
func parseForkPoint(s string) (thread, point string, err error) {
	thread, point, ok := strings.Cut(s, "@")
	if !ok {
		return "", "", fmt.Errorf("--fork %q: want THREAD@POINT (a thread id, '@', a checkpoint or message id)", s)
	}
	for _, part := range []struct{ name, v string }{{"thread", thread}, {"point", point}} {
		switch {
		case part.v == "":
			return "", "", fmt.Errorf("--fork %q: the %s is empty; want THREAD@POINT", s, part.name)
		case len(part.v) > maxForkID:
			return "", "", fmt.Errorf("--fork: the %s is %d bytes, more than %d", part.name, len(part.v), maxForkID)
		case strings.ContainsFunc(part.v, func(r rune) bool {
			return r == '@' || r == unicode.ReplacementChar || unicode.IsSpace(r) || unicode.IsControl(r)
		}):
			return "", "", fmt.Errorf("--fork %q: the %s holds '@', a space, a control character or bytes that are not UTF-8", s, part.name)
		}
	}
	return thread, point, nil
}

// forkFor forks thread at point for baton run --fork and returns the
// fork's id; stop is set when nothing is to run on it: no message was
// given (only), or the fork's own run waits for a decision, which is
// printed with how to give it.
func forkFor(ctx context.Context, svc *threads.Service, owner, thread, point, editText string, only bool, stdout, stderr io.Writer, file, database string) (string, bool, error) {
	var opts threads.ForkOptions
	if editText != "" {
		opts.Edit = &threads.ForkEdit{Text: editText}
	}
	f, err := svc.Fork(ctx, owner, thread, point, opts)
	switch {
	case errors.Is(err, threads.ErrForkPoint), errors.Is(err, store.ErrNotFound):
		return "", true, usageError{fmt.Errorf("fork: %s is not a checkpoint or message of thread %s (owner %s)", point, thread, owner)}
	case errors.Is(err, store.ErrInvalid):
		return "", true, usageError{fmt.Errorf("fork: %w", err)}
	case err != nil:
		return "", true, err
	}
	fmt.Fprintf(stderr, "forked thread %s at %s: thread %s\n", thread, point, f.ID)
	var info threads.ForkInfo
	_ = json.Unmarshal(f.Metadata[threads.MetadataFork], &info)
	if info.RunID != "" {
		db := ""
		if database != "" {
			db = " --database " + database
		}
		fmt.Fprintf(stdout, "thread %s: run %s waits for a decision\n  decide with: baton resume %s --run %s%s --decision approve|reject|edit\n",
			f.ID, info.RunID, file, info.RunID, db)
		return f.ID, true, nil
	}
	if only {
		fmt.Fprintf(stdout, "thread %s\n", f.ID)
		return f.ID, true, nil
	}
	return f.ID, false, nil
}
