package sqlitestore

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestParsePathAndDSN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, file string
		memory   bool
		query    string
	}{
		{"/var/lib/baton.db", "/var/lib/baton.db", false, ""},
		{"rel/b.db", "rel/b.db", false, ""},
		{":memory:", ":memory:", true, ""},
		{"file::memory:", ":memory:", true, ""},
		{"file:/tmp/a%20b.db?cache=private", "/tmp/a b.db", false, "cache=private"},
		{"file:///tmp/x.db", "/tmp/x.db", false, ""},
		{"file:x?mode=memory", "x", true, "mode=memory"},
	} {
		file, q, memory, err := parsePath(tc.in)
		if err != nil || file != tc.file || memory != tc.memory || q.Encode() != tc.query {
			t.Errorf("parsePath(%q) = %q, %q, %v, %v", tc.in, file, q.Encode(), memory, err)
		}
	}
	q, _ := url.ParseQuery("_pragma=cache_size(-4000)&_pragma=foreign_keys(0)&_txlock=deferred&cache=private")
	w := dsn("/tmp/a?b#c%.db", q, false, 3*time.Second, false)
	for _, want := range []string{"file:/tmp/a%3fb%23c%25.db?", "_txlock=immediate", "cache=private", "cache_size%28-4000%29",
		"busy_timeout%283000%29", "foreign_keys%281%29", "journal_mode%28WAL%29", "synchronous%28FULL%29", "temp_store%28MEMORY%29"} {
		if !strings.Contains(w, want) {
			t.Errorf("writer DSN %q lacks %q", w, want)
		}
	}
	if strings.Contains(w, "foreign_keys%280%29") || strings.Contains(w, "deferred") || strings.Contains(w, "query_only") {
		t.Errorf("writer DSN %q keeps an overridden setting", w)
	}
	r := dsn("/tmp/x.db", nil, false, time.Second, true)
	if !strings.Contains(r, "query_only%281%29") || strings.Contains(r, "_txlock") || strings.Contains(r, "temp_store") {
		t.Errorf("reader DSN %q", r)
	}
	m := dsn(":memory:", nil, true, time.Second, false)
	if !strings.HasPrefix(m, "file::memory:?") || strings.Contains(m, "journal_mode") {
		t.Errorf("memory DSN %q", m)
	}
}
