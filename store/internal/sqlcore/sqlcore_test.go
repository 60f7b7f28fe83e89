package sqlcore

import (
	"encoding/json"
	"reflect"
	"testing"
	"testing/fstest"
)

// TestMergePatch runs the examples of RFC 7396, appendix A.
func TestMergePatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `null`, ``},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		{``, `{"a":1}`, `{"a":1}`},
		{`{"n":1}`, `{"big":123456789012345678901234567890}`, `{"big":123456789012345678901234567890,"n":1}`},
	} {
		got, err := MergePatch(json.RawMessage(tc.target), json.RawMessage(tc.patch))
		if err != nil {
			t.Fatalf("MergePatch(%s, %s): %v", tc.target, tc.patch, err)
		}
		if tc.want == "" {
			if got != nil {
				t.Errorf("MergePatch(%s, %s) = %s, want nil", tc.target, tc.patch, got)
			}
			continue
		}
		var g, w any
		if err := unmarshalNumber(got, &g); err != nil {
			t.Fatal(err)
		}
		if err := unmarshalNumber([]byte(tc.want), &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("MergePatch(%s, %s) = %s, want %s", tc.target, tc.patch, got, tc.want)
		}
	}
	for _, bad := range []string{`{`, `{} {}`, ``} {
		if _, err := MergePatch(nil, json.RawMessage(bad)); err == nil {
			t.Errorf("MergePatch(nil, %q) succeeded", bad)
		}
	}
}

func TestLoadMigrations(t *testing.T) {
	t.Parallel()
	ok := fstest.MapFS{
		"m/001_a.up.sql":   {Data: []byte("up1")},
		"m/001_a.down.sql": {Data: []byte("down1")},
		"m/002_b.up.sql":   {Data: []byte("up2")},
		"m/002_b.down.sql": {Data: []byte("down2")},
	}
	ms, err := LoadMigrations(ok, "m")
	if err != nil {
		t.Fatal(err)
	}
	want := []Migration{{1, "a", "up1", "down1"}, {2, "b", "up2", "down2"}}
	if !reflect.DeepEqual(ms, want) {
		t.Fatalf("LoadMigrations = %+v", ms)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"gap":       {"m/001_a.up.sql": {Data: []byte("x")}, "m/001_a.down.sql": {Data: []byte("x")}, "m/003_c.up.sql": {Data: []byte("x")}, "m/003_c.down.sql": {Data: []byte("x")}},
		"no down":   {"m/001_a.up.sql": {Data: []byte("x")}},
		"bad name":  {"m/1_a.up.sql": {Data: []byte("x")}},
		"two names": {"m/001_a.up.sql": {Data: []byte("x")}, "m/001_b.down.sql": {Data: []byte("x")}},
	} {
		if _, err := LoadMigrations(fsys, "m"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestCursor(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "!!", "bm9jb2xvbg", "MTIzOg"} { // "nocolon", "123:"
		if _, _, err := decodeCursor(bad); err == nil {
			t.Errorf("decodeCursor(%q) succeeded", bad)
		}
	}
}
