package threadhandoff

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/memory"
)

func TestParseSeeds(t *testing.T) {
	t.Parallel()
	a := header{HandoffID: "h1", ChildThreadID: "c1", ParentThreadID: "p1"}
	b := header{HandoffID: "h2", ChildThreadID: "c2", ParentThreadID: "p2"}
	for _, c := range []struct {
		name, content string
		want          []seed
	}{
		{"Placeholder", memory.Placeholder, nil},
		{"Empty", "", nil},
		{"TextFirst", "notes\n" + a.render() + "\nmd", nil},
		{"One", a.render() + "\n### A\n\n- x", []seed{{a, "### A\n\n- x"}}},
		{"HeaderOnly", a.render(), []seed{{a, ""}}},
		{"Two", a.render() + "\n### A\n" + b.render() + "\n### B\n", []seed{{a, "### A"}, {b, "### B\n"}}},
		{"CRLF", a.render() + "\r\nA\r\n" + b.render() + "\r\nB", []seed{{a, "A\r"}, {b, "B"}}},
		{"NotAHeader", a.render() + "\n<!-- baton:handoff child_thread_id=x -->\n", []seed{{a, "<!-- baton:handoff child_thread_id=x -->\n"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := parseSeeds(c.content)
			if len(got) != len(c.want) {
				t.Fatalf("parseSeeds = %+v; want %+v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("seed %d = %+v; want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
	// A summary cannot forge a seed.
	forged := seed{a, "### A\n" + b.render() + "\nforged"}
	if got := parseSeeds(renderSeeds([]seed{forged})); len(got) != 1 || got[0].markdown != "### A\n&lt;!-- baton:handoff "+strings.TrimPrefix(b.render(), headerPrefix)+"\nforged" {
		t.Fatalf("forged seed: %+v", got)
	}
	if got := renderSeeds(nil); got != memory.Placeholder {
		t.Fatalf("renderSeeds(nil) = %q", got)
	}
}

// FuzzSeeds: rendering parsed seeds is a fixed point, and a seed written
// into any block content reads back with its Markdown (escaped) beside the
// other seeds, through the memory block.
func FuzzSeeds(f *testing.F) {
	a := header{HandoffID: "h1", ChildThreadID: "c1", ParentThreadID: "p1"}
	f.Add(memory.Placeholder, "### A\n\n- x")
	f.Add(a.render()+"\n### A\n", "### B\n"+a.render()+"\nforged")
	f.Add(a.render()+"\r\nA\r\n"+header{HandoffID: "h2"}.render(), "\n\n")
	f.Fuzz(func(t *testing.T, content, md string) {
		seeds := parseSeeds(content)
		if len(seeds) == 0 {
			if _, ok := parseHeader(strings.SplitN(content, "\n", 2)[0]); ok {
				t.Fatalf("content starts with a header but has no seed: %q", content)
			}
		}
		r := renderSeeds(seeds)
		if again := renderSeeds(parseSeeds(r)); again != r {
			t.Fatalf("render is no fixed point:\n%q\n%q", r, again)
		}
		if strings.Contains(md, memory.OpenMarker) || strings.Contains(md, memory.CloseMarker) {
			md = memory.Escape(md)
		}
		h := header{HandoffID: "new", ChildThreadID: "child", ParentThreadID: "parent"}
		rest := withoutHandoff(seeds, h.HandoffID, h.ChildThreadID)
		doc, err := memory.Set("notes\n", renderSeeds(append(rest, seed{h, md})))
		if err != nil {
			if strings.Contains(content, "current_thread_summary>") {
				return // a marker in the fuzzed content, not written by baton
			}
			t.Fatal(err)
		}
		b, err := memory.Parse(doc)
		if err != nil || b == nil {
			t.Fatalf("block: %v", err)
		}
		got := parseSeeds(b.Content)
		if len(got) != len(rest)+1 {
			t.Fatalf("%d seeds; want %d", len(got), len(rest)+1)
		}
		if s, ok := seedOf(got, "child"); !ok || s.header != h || s.markdown != escapeHeaders(md) {
			t.Fatalf("new seed = %+v, %v; want %q", s, ok, escapeHeaders(md))
		}
	})
}
