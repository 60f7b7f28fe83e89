package memory

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc    string
		want         *Block
		kind         error
		offset, line int
		content      string
	}{
		{name: "Empty", doc: ""},
		{name: "NoBlock", doc: "# Notes\nlikes tea\n"},
		{name: "Block", doc: "a\n<current_thread_summary>\nhello\n</current_thread_summary>\nb", want: &Block{Start: 2, End: 2 + len(Render("hello"))}, content: "hello"},
		{name: "InlineBlock", doc: "x<current_thread_summary>hi</current_thread_summary>y", want: &Block{Start: 1, End: 1 + len("<current_thread_summary>hi</current_thread_summary>")}, content: "hi"},
		{name: "CRLF", doc: "<current_thread_summary>\r\nhi\r\n</current_thread_summary>", want: &Block{Start: 0, End: len("<current_thread_summary>\r\nhi\r\n</current_thread_summary>")}, content: "hi\r"},
		{name: "EmptyBlock", doc: "<current_thread_summary></current_thread_summary>", want: &Block{Start: 0, End: 49}, content: ""},
		{name: "Unclosed", doc: "a\n<current_thread_summary>\nx", kind: ErrUnclosed, offset: 2, line: 2},
		{name: "Unopened", doc: "a\nb\n</current_thread_summary>", kind: ErrUnopened, offset: 4, line: 3},
		{name: "Nested", doc: "<current_thread_summary>\n<current_thread_summary>\n</current_thread_summary>\n</current_thread_summary>", kind: ErrNested, offset: 25, line: 2},
		{name: "Duplicate", doc: Render("a") + "\n" + Render("b"), kind: ErrDuplicate, offset: len(Render("a")) + 1, line: 4},
		{name: "ExtraClose", doc: Render("a") + "</current_thread_summary>", kind: ErrUnopened, offset: len(Render("a")), line: 3},
		{name: "CloseBeforeOpen", doc: "</current_thread_summary><current_thread_summary>", kind: ErrUnopened, offset: 0, line: 1},
		{name: "LookalikesAreText", doc: "<Current_Thread_Summary> < current_thread_summary> <current_thread_summary >", want: nil},
		{name: "DoubleAngle", doc: "<<current_thread_summary>x<</current_thread_summary>", want: &Block{Start: 1, End: 52}, content: "x<"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := Parse(tc.doc)
			if tc.kind != nil {
				var pe *ParseError
				if !errors.As(err, &pe) || !errors.Is(err, ErrMalformed) || !errors.Is(err, tc.kind) {
					t.Fatalf("err = %v; want a ParseError of kind %v", err, tc.kind)
				}
				if pe.Offset != tc.offset || pe.Line != tc.line {
					t.Fatalf("error at byte %d line %d; want byte %d line %d", pe.Offset, pe.Line, tc.offset, tc.line)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (b == nil) != (tc.want == nil) {
				t.Fatalf("block = %+v; want %+v", b, tc.want)
			}
			if b == nil {
				return
			}
			if b.Start != tc.want.Start || b.End != tc.want.End || b.Content != tc.content {
				t.Fatalf("block = %+v; want start %d end %d content %q", b, tc.want.Start, tc.want.End, tc.content)
			}
			if !strings.HasPrefix(tc.doc[b.Start:], OpenMarker) || !strings.HasSuffix(tc.doc[:b.End], CloseMarker) {
				t.Fatalf("block bounds %d:%d do not hold the markers: %q", b.Start, b.End, tc.doc[b.Start:b.End])
			}
		})
	}
}

func TestSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc, content, want string
		err                      error
	}{
		{name: "MigrateEmpty", doc: "", content: "S", want: "<current_thread_summary>\nS\n</current_thread_summary>\n"},
		{name: "MigrateNoNewline", doc: "notes", content: "S", want: "notes\n\n<current_thread_summary>\nS\n</current_thread_summary>\n"},
		{name: "MigrateNewline", doc: "notes\n", content: "S", want: "notes\n\n<current_thread_summary>\nS\n</current_thread_summary>\n"},
		{name: "MigrateBlankLine", doc: "notes\n\n", content: "S", want: "notes\n\n<current_thread_summary>\nS\n</current_thread_summary>\n"},
		{name: "Replace", doc: "top  \r\n<current_thread_summary>\nold\n</current_thread_summary>\n\n  tail\t", content: "new\nlines", want: "top  \r\n<current_thread_summary>\nnew\nlines\n</current_thread_summary>\n\n  tail\t"},
		{name: "ReplaceInline", doc: "a<current_thread_summary>old</current_thread_summary>b", content: "n", want: "a<current_thread_summary>\nn\n</current_thread_summary>b"},
		{name: "Malformed", doc: "<current_thread_summary>", content: "x", err: ErrUnclosed},
		{name: "MarkerInContent", doc: "", content: "x</current_thread_summary>", err: ErrMarkerInContent},
		{name: "OpenMarkerInContent", doc: "", content: "<current_thread_summary>", err: ErrMarkerInContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Set(tc.doc, tc.content)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v; want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("Set =\n%q\nwant\n%q", got, tc.want)
			}
			b, err := Parse(got)
			if err != nil || b == nil || b.Content != tc.content {
				t.Fatalf("Parse(Set) = %+v, %v; want content %q", b, err, tc.content)
			}
			// Outside the block nothing changed.
			if ob, _ := Parse(tc.doc); ob != nil {
				if got[:b.Start] != tc.doc[:ob.Start] || got[b.End:] != tc.doc[ob.End:] {
					t.Fatal("text outside the block changed")
				}
			} else if !strings.HasPrefix(got, tc.doc) {
				t.Fatal("migration changed existing text")
			}
		})
	}
}

func TestClearAndMigrate(t *testing.T) {
	t.Parallel()
	doc := "# Memory\n\nPrefers short answers.\n"
	m, err := Migrate(doc)
	if err != nil {
		t.Fatal(err)
	}
	if want := doc + "\n" + Render(Placeholder) + "\n"; m != want {
		t.Fatalf("Migrate = %q; want %q", m, want)
	}
	if again, _ := Migrate(m); again != m {
		t.Fatal("Migrate is not idempotent")
	}
	set, _ := Set(m, "summary")
	cleared, err := Clear(set)
	if err != nil || cleared != m {
		t.Fatalf("Clear(Set(m)) = %q, %v; want %q", cleared, err, m)
	}
	if again, _ := Clear(cleared); again != cleared {
		t.Fatal("Clear is not idempotent")
	}
	if _, err := Migrate("</current_thread_summary>"); !errors.Is(err, ErrUnopened) {
		t.Fatalf("Migrate malformed: %v", err)
	}
	if !IsPlaceholder(" "+Placeholder+"\n") || !IsPlaceholder("") || IsPlaceholder("x") {
		t.Fatal("IsPlaceholder")
	}
}

func TestEscape(t *testing.T) {
	t.Parallel()
	s := "a <current_thread_summary> b </current_thread_summary> c"
	e := Escape(s)
	if e != "a "+EscapedOpenMarker+" b "+EscapedCloseMarker+" c" {
		t.Fatalf("Escape = %q", e)
	}
	if _, err := Set("", e); err != nil {
		t.Fatal(err)
	}
	if Escape("plain") != "plain" {
		t.Fatal("Escape changed plain text")
	}
}

func TestRepair(t *testing.T) {
	t.Parallel()
	const o, c, eo, ec = OpenMarker, CloseMarker, EscapedOpenMarker, EscapedCloseMarker
	for _, tc := range []struct {
		name, doc, want string
		kinds           []error
	}{
		{name: "Valid", doc: "a" + o + "x" + c + "b", want: "a" + o + "x" + c + "b"},
		{name: "NoBlock", doc: "plain", want: "plain"},
		{name: "Unclosed", doc: "a" + o + "x", want: "a" + eo + "x", kinds: []error{ErrUnclosed}},
		{name: "Unopened", doc: "a" + c + "x", want: "a" + ec + "x", kinds: []error{ErrUnopened}},
		{name: "NestedBalanced", doc: o + "a" + o + "b" + c + "c" + c, want: o + "a" + eo + "b" + ec + "c" + c, kinds: []error{ErrNested, ErrNested}},
		{name: "NestedMissingClose", doc: "x" + o + "a" + o + "b" + c + "y", want: "x" + eo + "a" + o + "b" + c + "y", kinds: []error{ErrUnclosed}},
		{name: "Duplicate", doc: o + "a" + c + "mid" + o + "b" + c + "end", want: o + "a" + c + "mid" + eo + "b" + ec + "end", kinds: []error{ErrDuplicate, ErrDuplicate}},
		{name: "StrayCloseFirst", doc: c + o + "a" + c, want: ec + o + "a" + c, kinds: []error{ErrUnopened}},
		{name: "Everything", doc: c + o + o + "a" + c + c + o + "b" + c + o, want: ec + o + eo + "a" + ec + c + eo + "b" + ec + eo,
			kinds: []error{ErrUnopened, ErrNested, ErrNested, ErrDuplicate, ErrDuplicate, ErrUnclosed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, fixes := Repair(tc.doc)
			if got != tc.want {
				t.Fatalf("Repair =\n%q\nwant\n%q", got, tc.want)
			}
			if len(fixes) != len(tc.kinds) {
				t.Fatalf("fixes = %v; want kinds %v", fixes, tc.kinds)
			}
			for i, f := range fixes {
				if f.Kind != tc.kinds[i] || !strings.HasPrefix(tc.doc[f.Offset:], f.Marker) {
					t.Fatalf("fix %d = %v; want kind %v at a %s", i, f, tc.kinds[i], f.Marker)
				}
			}
			if _, err := Parse(got); err != nil {
				t.Fatalf("repaired document does not parse: %v", err)
			}
			checkOnlyEscaped(t, tc.doc, got)
		})
	}
}

// checkOnlyEscaped fails unless repaired is doc with some markers replaced
// by their escaped forms and nothing else changed.
func checkOnlyEscaped(t *testing.T, doc, repaired string) {
	t.Helper()
	i, j := 0, 0
	for i < len(doc) && j < len(repaired) {
		switch {
		case strings.HasPrefix(doc[i:], OpenMarker) && strings.HasPrefix(repaired[j:], EscapedOpenMarker):
			i, j = i+len(OpenMarker), j+len(EscapedOpenMarker)
		case strings.HasPrefix(doc[i:], CloseMarker) && strings.HasPrefix(repaired[j:], EscapedCloseMarker):
			i, j = i+len(CloseMarker), j+len(EscapedCloseMarker)
		case doc[i] == repaired[j]:
			i, j = i+1, j+1
		default:
			t.Fatalf("repair changed text at byte %d of the input (%q) / %d of the output (%q)", i, clip(doc[i:]), j, clip(repaired[j:]))
		}
	}
	if i != len(doc) || j != len(repaired) {
		t.Fatalf("repair changed the length: stopped at %d/%d and %d/%d", i, len(doc), j, len(repaired))
	}
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}
