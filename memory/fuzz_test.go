package memory

import (
	"errors"
	"strings"
	"testing"
)

// fuzzSeeds are documents with every kind of marker trouble.
var fuzzSeeds = []string{
	"",
	"# notes\n",
	Render(Placeholder),
	"a\n" + Render("x") + "\nb",
	OpenMarker,
	CloseMarker,
	OpenMarker + OpenMarker + CloseMarker,
	OpenMarker + OpenMarker + CloseMarker + CloseMarker,
	Render("a") + Render("b"),
	CloseMarker + "x" + OpenMarker,
	"<current_thread<current_thread_summary>_summary>",
	"<<current_thread_summary>>" + "</</current_thread_summary>>",
	EscapedOpenMarker + CloseMarker,
	"\r\n" + OpenMarker + "\r\n\r\n" + CloseMarker + "\r\n",
}

// FuzzParse checks that Parse never panics, that its block bounds hold the
// markers, and that Repair always returns a parsable document that differs
// from the input only by escaped markers (nothing lost) and is a fixed point.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		b, err := Parse(doc)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, ErrMalformed) || pe.Offset < 0 || pe.Offset >= len(doc) {
				t.Fatalf("bad error %v", err)
			}
		} else if b != nil {
			if b.Start < 0 || b.End > len(doc) || b.Start >= b.End ||
				!strings.HasPrefix(doc[b.Start:], OpenMarker) || !strings.HasSuffix(doc[:b.End], CloseMarker) {
				t.Fatalf("bad bounds %d:%d", b.Start, b.End)
			}
		}
		r, fixes := Repair(doc)
		if (err == nil) != (len(fixes) == 0) || (err == nil && r != doc) {
			t.Fatalf("Repair of a valid document changed it, or of an invalid one fixed nothing (err %v, %d fixes)", err, len(fixes))
		}
		if _, err := Parse(r); err != nil {
			t.Fatalf("repaired document does not parse: %v\ninput %q\noutput %q", err, doc, r)
		}
		checkOnlyEscaped(t, doc, r)
		if again, fx := Repair(r); again != r || len(fx) != 0 {
			t.Fatal("Repair is not a fixed point")
		}
	})
}

// FuzzSet checks that Set, on any document Repair accepts and any content
// Escape accepts, replaces only the block: the text outside it is kept byte
// for byte, the content round-trips, and Clear restores the placeholder.
func FuzzSet(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add(s, []string{"summary", "", "\n", "a\nb\n", CloseMarker, "x\r"}[i%6])
	}
	f.Fuzz(func(t *testing.T, doc, content string) {
		doc, _ = Repair(doc)
		content = Escape(content)
		before, _ := Parse(doc)
		out, err := Set(doc, content)
		if err != nil {
			t.Fatalf("Set: %v", err)
		}
		b, err := Parse(out)
		if err != nil || b == nil {
			t.Fatalf("Parse(Set) = %v, %v", b, err)
		}
		if b.Content != content {
			t.Fatalf("content %q did not round-trip: %q", content, b.Content)
		}
		if before == nil {
			if !strings.HasPrefix(out, doc) || out[b.End:] != "\n" {
				t.Fatal("migration changed existing text")
			}
		} else if out[:b.Start] != doc[:before.Start] || out[b.End:] != doc[before.End:] {
			t.Fatal("text outside the block changed")
		}
		cleared, err := Clear(out)
		if err != nil {
			t.Fatal(err)
		}
		if cb, _ := Parse(cleared); cb == nil || cb.Content != Placeholder || cleared[:cb.Start] != out[:b.Start] || cleared[cb.End:] != out[b.End:] {
			t.Fatal("Clear changed text outside the block or did not restore the placeholder")
		}
	})
}
