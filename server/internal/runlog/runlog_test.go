package runlog_test

import (
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/server/internal/runlog"
)

func entry(seq, sub int) runlog.Entry {
	return runlog.Entry{At: runlog.Cursor{Seq: seq, Sub: sub}, Type: "x", Data: []byte(`{}`)}
}

func TestCursor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want runlog.Cursor
		bad  bool
	}{
		{"", runlog.Cursor{}, false},
		{"12", runlog.Cursor{Seq: 12}, false},
		{"12.3", runlog.Cursor{Seq: 12, Sub: 3}, false},
		{"12.3.4", runlog.Cursor{Seq: 12, Sub: 3, Ver: 4}, false},
		{"12.0.4", runlog.Cursor{Seq: 12, Ver: 4}, false},
		{"12.3.4.5", runlog.Cursor{Seq: 12, Sub: 3, Ver: 4, Ext: 5}, false},
		{"12.0.0.5", runlog.Cursor{Seq: 12, Ext: 5}, false},
		{"12.3.4.5.6", runlog.Cursor{}, true},
		{"-1", runlog.Cursor{}, true},
		{"1.x", runlog.Cursor{}, true},
		{"abc", runlog.Cursor{}, true},
		{"99999999999999", runlog.Cursor{}, true},
	} {
		got, err := runlog.ParseCursor(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseCursor(%q) = %v, %v", tc.in, got, err)
		}
		if !tc.bad && tc.in != "" && got.String() != tc.in {
			t.Errorf("String() = %q, want %q", got.String(), tc.in)
		}
	}
	if !(runlog.Cursor{Seq: 3, Sub: 9}).Less(runlog.Cursor{Seq: 4}) || (runlog.Cursor{Seq: 4}).Less(runlog.Cursor{Seq: 3, Sub: 1}) {
		t.Error("Less")
	}
	// A worker's delta comes after the stored event and the draft it
	// follows, before the next draft and the next stored event.
	delta := runlog.Cursor{Seq: 3, Sub: 1, Ver: 2, Ext: 7}
	for _, before := range []runlog.Cursor{{Seq: 3, Sub: 1}, {Seq: 3, Sub: 1, Ver: 2}, {Seq: 3, Sub: 1, Ver: 2, Ext: 6}} {
		if !before.Less(delta) {
			t.Errorf("%v is not before %v", before, delta)
		}
	}
	for _, after := range []runlog.Cursor{{Seq: 3, Sub: 1, Ver: 3}, {Seq: 3, Sub: 2}, {Seq: 4}, {Seq: 3, Sub: 1, Ver: 2, Ext: 8}} {
		if !delta.Less(after) {
			t.Errorf("%v is not after %v", after, delta)
		}
	}
}

func TestSinceAndDuplicates(t *testing.T) {
	t.Parallel()
	l := runlog.New(runlog.Limits{})
	for i := 1; i <= 5; i++ {
		if !l.Append(entry(i, 0)) {
			t.Fatalf("append %d", i)
		}
	}
	if l.Append(entry(3, 0)) || l.Append(entry(5, 0)) {
		t.Fatal("duplicate appended")
	}
	if !l.Append(entry(5, 1)) {
		t.Fatal("sub entry refused")
	}
	r := l.Since(runlog.Cursor{Seq: 2}, 0, nil)
	if len(r.Entries) != 4 || r.Entries[0].At.Seq != 3 || r.Entries[3].At != (runlog.Cursor{Seq: 5, Sub: 1}) || r.Done || r.Lost {
		t.Fatalf("since 2: %+v", r)
	}
	r = l.Since(runlog.Cursor{Seq: 5}, 0, nil)
	if len(r.Entries) != 1 {
		t.Fatalf("since 5: %+v", r)
	}
	r = l.Since(runlog.Cursor{}, 2, nil)
	if len(r.Entries) != 2 || r.Wait == nil {
		t.Fatalf("max: %+v", r)
	}
	select {
	case <-r.Wait:
	default:
		t.Fatal("more entries: wait should be ready")
	}
	l.Close("completed")
	r = l.Since(runlog.Cursor{Seq: 5, Sub: 1}, 0, nil)
	if !r.Done || r.Status != "completed" || len(r.Entries) != 0 {
		t.Fatalf("closed: %+v", r)
	}
	if l.Append(entry(9, 0)) {
		t.Fatal("append to closed log")
	}
	l.Reopen()
	if !l.Append(entry(9, 0)) {
		t.Fatal("append to reopened log")
	}
}

func TestBoundReportsLost(t *testing.T) {
	t.Parallel()
	l := runlog.New(runlog.Limits{MaxEvents: 3})
	for i := 1; i <= 10; i++ {
		l.Append(entry(i, 0))
	}
	r := l.Since(runlog.Cursor{Seq: 2}, 0, nil)
	if !r.Lost || len(r.Entries) != 3 || r.Entries[0].At.Seq != 8 {
		t.Fatalf("%+v", r)
	}
	r = l.Since(runlog.Cursor{Seq: 7}, 0, nil)
	if r.Lost || len(r.Entries) != 3 {
		t.Fatalf("%+v", r)
	}
	b := runlog.New(runlog.Limits{MaxBytes: 200})
	for i := 1; i <= 10; i++ {
		b.Append(runlog.Entry{At: runlog.Cursor{Seq: i}, Data: make([]byte, 60)})
	}
	if r := b.Since(runlog.Cursor{}, 0, nil); !r.Lost || len(r.Entries) > 2 {
		t.Fatalf("bytes bound: %d entries, lost %v", len(r.Entries), r.Lost)
	}
}

func TestReadersFollowWriter(t *testing.T) {
	t.Parallel()
	l := runlog.New(runlog.Limits{MaxEvents: 100000})
	const n = 2000
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var c runlog.Cursor
			got := 0
			for {
				r := l.Since(c, 64, nil)
				for _, e := range r.Entries {
					if e.At.Seq != c.Seq+1 {
						t.Errorf("gap: %v after %v", e.At, c)
						return
					}
					c = e.At
					got++
				}
				if r.Done {
					break
				}
				select {
				case <-r.Wait:
				case <-time.After(10 * time.Second):
					t.Error("reader stuck")
					return
				}
			}
			if got != n {
				t.Errorf("read %d of %d", got, n)
			}
		})
	}
	for i := 1; i <= n; i++ {
		l.Append(entry(i, 0))
	}
	l.Close("completed")
	wg.Wait()
}

func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "0", "12", "12.3", "-1", "1.", ".1", "1.2.3", "1.2.3.4", "1.0.0.4", "1.2.3.4.5", "99999999999", " 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := runlog.ParseCursor(s)
		if err != nil {
			return
		}
		if c.Pos != 0 || c.Seq < 0 || c.Sub < 0 || c.Ver < 0 || c.Ext < 0 {
			t.Fatalf("%q: negative cursor %v", s, c)
		}
		back, err := runlog.ParseCursor(c.String())
		if err != nil || back != c {
			t.Fatalf("%q: %v does not round-trip: %v %v", s, c, back, err)
		}
	})
}

// FuzzThreadCursor: a thread stream's id parses to a cursor (or an error,
// or a legacy id) without panicking, never negative, and a parsed cursor's
// id parses back to it.
func FuzzThreadCursor(f *testing.F) {
	for _, s := range []string{"", "0", "12", "1.2", "1.2.3", "1.2.3.4", "1.2.3.4.5", "1.2.3.4.5.6", "1.2.0.0.1", "1700000000.5", "3.0.0.7", "-1.2", "1..2", "+1.2", "1.2.", " 1.2", "99999999999.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, legacy, err := runlog.ThreadCursor(s)
		if err != nil || legacy {
			if legacy && c != (runlog.Cursor{}) {
				t.Fatalf("%q: legacy id with a cursor %v", s, c)
			}
			return
		}
		if c.Pos < 0 || c.Seq < 0 || c.Sub < 0 || c.Ver < 0 || c.Ext < 0 {
			t.Fatalf("%q: negative cursor %v", s, c)
		}
		if s == "" {
			return
		}
		back, legacy, err := runlog.ThreadCursor(c.Thread())
		if err != nil || legacy || back != c {
			t.Fatalf("%q: %v (%q) does not round-trip: %v %v %v", s, c, c.Thread(), back, legacy, err)
		}
	})
}
