package open_test

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/open"
)

// schemeLike is a value that starts like a URL (RFC 3986 scheme, then
// ":"), but not a Windows drive (C:\, C:/).
var (
	schemeLike = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	drive      = regexp.MustCompile(`^[A-Za-z]:[\\/]`)
)

// FuzzResolve: every value is one of the closed list of forms or an
// ErrInvalid error without the URL's password; a SQLite file is never a
// value that starts like a URL of another scheme, and a value that starts
// with postgres: is PostgreSQL or an error.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"", "sqlite:baton.db", "sqlite:/var/lib/baton/baton.db", "sqlite:///var/lib/baton.db", "sqlite://rel/baton.db",
		"sqlite::memory:", "sqlite://:memory:", "sqlite:/tmp/b.db?_pragma=cache_size(-2000)", "sqlite:file:/tmp/b.db?mode=rwc",
		"file:/tmp/b.db?cache=private", "file::memory:", "./baton.db", "baton.db", "C:\\baton.db", "C:/b.db",
		"postgres://u:pw@h:5432/db?sslmode=disable", "postgresql://u@h/db", "PostgreSQL://u@h/db",
		"postgres:/127.0.0.1/test", "postgresql:test", "postgress://x", "mysql://user:s3cret@h/db", "sqlite3:x.db",
		"sqlite:postgres://h/db", "localhost:5432", " postgres://h/db", "file:", "sqlite:?x=1", "a:b", "1:x", "-:x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		backend, target, err := open.Resolve(in)
		if err != nil {
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("Resolve(%q): %v, not ErrInvalid", in, err)
			}
			if u, perr := url.Parse(in); perr == nil && u.User != nil {
				if pw, ok := u.User.Password(); ok && len(pw) >= 6 && !strings.Contains(strings.Replace(in, pw, "", 1), pw) &&
					strings.Contains(err.Error(), pw) {
					t.Fatalf("Resolve(%q): the error shows the password: %v", in, err)
				}
			}
			if b, berr := open.Backend(in); b != "" || berr == nil {
				t.Fatalf("Backend(%q) = %q, %v after Resolve failed", in, b, berr)
			}
			return
		}
		if b, _ := open.Backend(in); b != backend {
			t.Fatalf("Backend(%q) = %q, Resolve says %q", in, b, backend)
		}
		lower := strings.ToLower(in)
		switch backend {
		case open.PostgreSQL:
			if !strings.HasPrefix(target, "postgres://") && !strings.HasPrefix(target, "postgresql://") {
				t.Fatalf("Resolve(%q): PostgreSQL target %q", in, target)
			}
		case open.SQLite:
			if strings.HasPrefix(lower, "postgres") && schemeLike.MatchString(in) {
				t.Fatalf("Resolve(%q): a postgres: value taken for SQLite %q", in, target)
			}
			if target == "" {
				t.Fatalf("Resolve(%q): empty SQLite target", in)
			}
			if target != ":memory:" && !strings.HasPrefix(target, "file:") && schemeLike.MatchString(target) && !drive.MatchString(target) {
				t.Fatalf("Resolve(%q): SQLite file %q starts like a URL", in, target)
			}
			if in != "" && schemeLike.MatchString(in) && !drive.MatchString(in) {
				scheme, _, _ := strings.Cut(lower, ":")
				if scheme != "sqlite" && scheme != "file" {
					t.Fatalf("Resolve(%q): scheme %q taken for SQLite", in, scheme)
				}
			}
		default:
			t.Fatalf("Resolve(%q): backend %q", in, backend)
		}
	})
}
