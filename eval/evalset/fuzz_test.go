package evalset_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/batonhq/baton/eval/evalset"
)

// seeds adds the sets of testdata and of the examples, in format f.
func seeds(f *testing.F, globs ...string) {
	for _, g := range globs {
		paths, _ := filepath.Glob(g)
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
}

// check is what every parser promises for data: a valid set that writes
// and reads back the same, or an *Error whose problems all have a message
// and a line inside the file; no panic, no hang.
func check(t *testing.T, data []byte, name string, f evalset.Format) {
	watchdog := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("parse hangs on %q", data)) })
	s, err := evalset.ParseFormat(data, name, f)
	watchdog.Stop()
	if err != nil {
		wantProblems(t, data, err, "set", s, s != nil)
		return
	}
	if err := evalset.Validate(s); err != nil {
		t.Fatalf("parsed set does not validate: %v", err)
	}
	out := evalset.FormatYAML
	if f == evalset.FormatJSONL {
		out = evalset.FormatJSONL
	}
	var b bytes.Buffer
	if err := evalset.Write(&b, s, out, ""); err != nil {
		t.Fatalf("write: %v", err)
	}
	back, err := evalset.ParseFormat(b.Bytes(), "back."+string(out), out)
	if err != nil {
		t.Fatalf("written set does not parse: %v\n%s", err, b.String())
	}
	if f == out {
		for i := range back.Cases {
			back.Cases[i].Line = s.Cases[i].Line
		}
		if !reflect.DeepEqual(back, s) {
			t.Fatalf("written set reads back different:\n%#v\n%#v\n%s", s, back, b.String())
		}
	}
}

// wantProblems checks the error of a parse of data that failed: the parse
// returned no value (got, a set or config named what; returned says
// whether it is not nil) and an *Error whose problems all have a message
// and a line inside the file.
func wantProblems(t *testing.T, data []byte, err error, what string, got any, returned bool) {
	t.Helper()
	var e *evalset.Error
	if returned || !errors.As(err, &e) || len(e.Problems) == 0 {
		t.Fatalf("%s %v, err %v: want nil and an *Error with problems", what, got, err)
	}
	lines := bytes.Count(data, []byte("\n")) + 1
	for _, p := range e.Problems {
		if p.Message == "" || p.Line < 0 || p.Line > lines {
			t.Fatalf("problem %+v: no message, or line outside 1..%d", p, lines)
		}
	}
}

func FuzzParseYAML(f *testing.F) {
	seeds(f, "testdata/*.yaml", "../../examples/*/eval.yaml")
	f.Add([]byte(laughs()))
	f.Add([]byte("version: 1\nname: x\ncases:\n  - id: a\n    turns:\n      - user: hi\n        expect: {answer: {rouge1: {reference: r, threshold: .nan}}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) { check(t, data, "fuzz.yaml", evalset.FormatYAML) })
}

func FuzzParseJSONL(f *testing.F) {
	seeds(f, "testdata/*.jsonl")
	f.Add([]byte("{\"set\": {\"version\": 1, \"name\": \"big\"}}\n{\"id\": \"a\", \"turns\": [{\"user\": \"hi\", \"expect\": {\"status\": \"completed\"}}]}\n"))
	f.Add([]byte("{\"id\": \"a\", \"turns\": [{\"user\": \"hi\"}]}\n{\"id\": \"b\", \"turns\": [{\"user\": 3}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) { check(t, data, "fuzz.jsonl", evalset.FormatJSONL) })
}

func FuzzParseADK(f *testing.F) {
	seeds(f, "testdata/adk/*.evalset.json")
	f.Add([]byte("{\"eval_set_id\": \"x\", \"eval_cases\": [{\"eval_id\": \"s\", \"conversation_scenario\": {}}]}"))
	f.Add([]byte("{\"eval_set_id\": \"x\", \"eval_cases\": [{\"eval_id\": \"a\", \"conversation\": [{\"user_content\": {\"parts\": [{\"text\": \"hi\"}]}, \"intermediate_data\": {\"invocation_events\": []}}]}]}"))
	f.Fuzz(func(t *testing.T, data []byte) { check(t, data, "fuzz.evalset.json", evalset.FormatADK) })
}

// FuzzParseADKConfig checks ADK's eval config reader: a config, or an
// *Error whose problems have a message and a line inside the file; a
// config that reads makes of the test evalset a valid set that writes and
// reads back.
func FuzzParseADKConfig(f *testing.F) {
	seeds(f, "testdata/adk/test_config.json")
	f.Add([]byte(`{"criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"}, "response_match_score": {"threshold": 0.6}}}`))
	f.Add([]byte(`{"criteria": {"tool_trajectory_avg_score": {"matchType": 2}, "safety_v1": 0.8}}`))
	f.Add([]byte(`{"criteria": {"rubric_based_tool_use_quality_v1": {"threshold": 0.7, "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": "p"}}]}}}`))
	f.Add([]byte(`{"criteria": {"response_match_score": null}}`))
	evalsetData, err := os.ReadFile("testdata/adk/support.evalset.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := evalset.ParseADKConfig(data, "test_config.json")
		if err != nil {
			wantProblems(t, data, err, "config", c, c != nil)
			return
		}
		s, err := evalset.ParseADKWith(evalsetData, "support.evalset.json", c)
		if err != nil {
			t.Fatalf("the test evalset under config %+v: %v", c, err)
		}
		var b bytes.Buffer
		if err := evalset.Write(&b, s, evalset.FormatYAML, ""); err != nil {
			t.Fatalf("write: %v", err)
		}
		if _, err := evalset.ParseFormat(b.Bytes(), "back.yaml", evalset.FormatYAML); err != nil {
			t.Fatalf("written set does not parse: %v\n%s", err, b.String())
		}
	})
}
