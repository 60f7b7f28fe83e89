// Package open opens a [store.Store] by URL, choosing the backend from the
// scheme. It lives apart from package store so that store does not import
// its backends.
package open

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/sqlitestore"
)

// Backends, as returned by [Backend].
const (
	SQLite     = "sqlite"
	PostgreSQL = "postgres"
)

// Open opens the store at url and, unless opts.NoMigrate, migrates it.
// url is one of the forms [Resolve] accepts. SQLite creates no folder, but
// for the default database (url "" or store.DefaultSQLitePath()), whose
// data folder Open creates.
//
// The caller closes the store. An invalid url is [store.ErrInvalid]; an
// unreachable database [store.ErrUnavailable].
func Open(ctx context.Context, url string, opts *store.Options) (store.Store, error) {
	backend, target, err := Resolve(url)
	if err != nil {
		return nil, err
	}
	// Return a nil interface, not a nil *Store, on error.
	if backend == PostgreSQL {
		s, err := pgstore.Open(ctx, target, opts)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	if def, err := store.DefaultSQLitePath(); err == nil && target == def {
		if err := os.MkdirAll(filepath.Dir(def), 0o700); err != nil {
			return nil, fmt.Errorf("open: %w: create the default data folder: %w", store.ErrUnavailable, err)
		}
	}
	s, err := sqlitestore.Open(ctx, target, opts)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Backend returns which backend url names: [SQLite] or [PostgreSQL].
func Backend(url string) (string, error) {
	b, _, err := Resolve(url)
	return b, err
}

// Resolve returns the backend url names and what its Open takes: a
// PostgreSQL URL, or a SQLite path, ":memory:" or file: URI. It is the one
// parser of database URLs, and its forms are a closed list:
//
//	""                              SQLite at store.DefaultSQLitePath()
//	sqlite:PATH, sqlite://PATH      SQLite file (sqlite:///abs/path is /abs/path)
//	sqlite::memory:                 private in-memory SQLite (tests, demos)
//	sqlite:PATH?query               SQLite file; query parameters go to the driver
//	file:PATH?query                 SQLite URI; query parameters go to the driver
//	postgres://…, postgresql://…    PostgreSQL, as pgx parses it
//	PATH                            SQLite file: a path that does not start
//	                                with a scheme (LETTERS:), such as
//	                                baton.db, ./data/baton.db, /var/lib/baton.db
//	                                or C:\baton.db
//
// Schemes are matched without regard to case. Anything else is an error
// wrapping [store.ErrInvalid] that says what is expected: a value that
// starts like a URL of another form (postgres: without //, postgress://,
// mysql://, sqlite3:x.db) is never taken for a SQLite file name.
func Resolve(url string) (backend, target string, err error) {
	if url == "" {
		p, err := store.DefaultSQLitePath()
		if err != nil {
			return "", "", fmt.Errorf("open: %w: no default SQLite path: %v", store.ErrInvalid, err)
		}
		return SQLite, p, nil
	}
	if strings.TrimSpace(url) != url {
		return "", "", invalidURL(url, "it starts or ends with white space")
	}
	scheme, rest, ok := cutScheme(url)
	if !ok {
		return SQLite, url, nil // a path
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		if !strings.HasPrefix(rest, "//") {
			return "", "", invalidURL(url, scheme+": needs // before the host: want postgres://USER@HOST:PORT/DATABASE")
		}
		return PostgreSQL, strings.ToLower(scheme) + ":" + rest, nil
	case "file":
		if rest == "" || strings.HasPrefix(rest, "?") {
			return "", "", invalidURL(url, "no SQLite path: want file:PATH")
		}
		return SQLite, "file:" + rest, nil
	case "sqlite":
		if r, ok := strings.CutPrefix(rest, "//"); ok {
			rest = r
		}
		switch {
		case rest == "" || strings.HasPrefix(rest, "?"):
			return "", "", invalidURL(url, "no SQLite path: want sqlite:PATH, sqlite:///ABSOLUTE/PATH or sqlite::memory:")
		case rest == ":memory:":
			return SQLite, rest, nil
		case len(rest) > 5 && strings.EqualFold(rest[:5], "file:"):
			return SQLite, "file:" + rest[5:], nil
		case strings.Contains(rest, "?"):
			return SQLite, "file:" + rest, nil
		}
		if s, _, ok := cutScheme(rest); ok {
			return "", "", invalidURL(url, "the SQLite path starts with a scheme ("+s+":): write sqlite:./PATH for a file of that name")
		}
		return SQLite, rest, nil
	}
	hint := "want sqlite:PATH, file:PATH, postgres://… or postgresql://…, or a path"
	if !strings.HasPrefix(rest, "//") {
		hint += " (write ./" + url + " for a file of that name)"
	}
	switch lower := strings.ToLower(scheme); {
	case strings.HasPrefix(lower, "postgre") || strings.HasPrefix(lower, "pg") || lower == "psql":
		hint = "did you mean postgres://…? " + hint
	case strings.HasPrefix(lower, "sqlite"):
		hint = "did you mean sqlite:PATH? " + hint
	}
	return "", "", invalidURL(url, "unknown scheme "+strconv.Quote(scheme)+": "+hint)
}

// cutScheme splits a URL's scheme (RFC 3986: a letter, then letters,
// digits, +, - or .) from the rest. A one-letter scheme followed by \ or /
// is a Windows drive (C:\x, C:/x), not a scheme.
func cutScheme(url string) (scheme, rest string, ok bool) {
	i := strings.IndexByte(url, ':')
	if i <= 0 {
		return "", url, false
	}
	for j := 0; j < i; j++ {
		c := url[j]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case j > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return "", url, false
		}
	}
	if i == 1 && len(url) > 2 && (url[2] == '\\' || url[2] == '/') {
		return "", url, false
	}
	return url[:i], url[i+1:], true
}

// invalidURL is the error of a database URL that is none of the forms.
func invalidURL(url, why string) error {
	return fmt.Errorf("open: %w: database URL %q: %s", store.ErrInvalid, Redact(url), why)
}

// Redact returns url with the password of its user information, if any,
// replaced by ***, for messages and logs.
func Redact(url string) string {
	scheme := strings.Index(url, "://")
	if scheme < 0 {
		return url
	}
	auth, _, _ := strings.Cut(url[scheme+3:], "/")
	at := strings.LastIndexByte(auth, '@')
	if at < 0 {
		return url
	}
	if user, _, ok := strings.Cut(auth[:at], ":"); ok {
		return url[:scheme+3] + user + ":***" + url[scheme+3+at:]
	}
	return url
}
