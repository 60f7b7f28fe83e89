package metric

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/batonhq/baton/eval/evalset"
)

// toolsMatch compares the tool calls made with the expected trajectory.
func toolsMatch(want *evalset.ToolsExpect, got []evalset.ToolCall) (bool, string) {
	mode, _ := evalset.NormalizeMatch(want.Match)
	detail := fmt.Sprintf("want %s (%s), got %s", describeExpectedCalls(want.Calls), mode, FormatTools(got))
	var ok bool
	switch mode {
	case evalset.MatchInOrder:
		ok = inOrder(want.Calls, got)
	case evalset.MatchAnyOrder:
		ok = anyOrder(want.Calls, got)
	default:
		ok = len(want.Calls) == len(got)
		for i := 0; ok && i < len(got); i++ {
			ok = callMatches(&want.Calls[i], &got[i])
		}
	}
	return ok, detail
}

// inOrder reports whether want is a subsequence of got.
func inOrder(want []evalset.ToolCallExpect, got []evalset.ToolCall) bool {
	i := 0
	for j := 0; i < len(want) && j < len(got); j++ {
		if callMatches(&want[i], &got[j]) {
			i++
		}
	}
	return i == len(want)
}

// anyOrder reports whether every expected call matches a call of its own
// (a bipartite matching: an expected call with loose arguments does not
// take the call a stricter one needs).
func anyOrder(want []evalset.ToolCallExpect, got []evalset.ToolCall) bool {
	owner := make([]int, len(got)) // got j → want i+1, 0 when free
	var assign func(i int, seen []bool) bool
	assign = func(i int, seen []bool) bool {
		for j := range got {
			if seen[j] || !callMatches(&want[i], &got[j]) {
				continue
			}
			seen[j] = true
			if owner[j] == 0 || assign(owner[j]-1, seen) {
				owner[j] = i + 1
				return true
			}
		}
		return false
	}
	for i := range want {
		if !assign(i, make([]bool, len(got))) {
			return false
		}
	}
	return true
}

// callMatches compares one call: its name, its agent if expected, and its
// arguments (exactly, or the listed fields, or not at all without Args).
func callMatches(w *evalset.ToolCallExpect, g *evalset.ToolCall) bool {
	if w.Name != g.Name || (w.Agent != "" && w.Agent != g.Agent) {
		return false
	}
	if w.Args == nil {
		return true
	}
	if len(w.Fields) == 0 {
		var got any
		if len(bytes.TrimSpace(g.Arguments)) == 0 {
			got = map[string]any{}
		} else if json.Unmarshal(g.Arguments, &got) != nil {
			return false
		}
		return reflect.DeepEqual(normal(w.Args), got)
	}
	ok, _ := fieldsMatch(w.Args, w.Fields, g.Arguments)
	return ok
}

// fieldsMatch compares fields of the JSON object got with their values in
// want (a field missing from want must be missing from got); it returns
// the first field that differs.
func fieldsMatch(want map[string]any, fields []string, got json.RawMessage) (bool, string) {
	if len(fields) == 0 {
		return true, ""
	}
	var obj map[string]any
	if len(bytes.TrimSpace(got)) > 0 && json.Unmarshal(got, &obj) != nil {
		return false, fields[0]
	}
	for _, f := range fields {
		w, inWant := want[f]
		g, inGot := obj[f]
		if inWant != inGot || (inWant && !reflect.DeepEqual(normal(w), g)) {
			return false, f
		}
	}
	return true, ""
}

// normal returns v as encoding/json decodes it (numbers as float64), so
// that values read from YAML compare with values read from JSON.
func normal(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func describeExpectedCalls(calls []evalset.ToolCallExpect) string {
	return oneLine(calls, "no tool call", func(c evalset.ToolCallExpect) string {
		s := c.Name
		switch {
		case c.Args == nil:
			s += "(…)"
		case len(c.Fields) > 0:
			sub := map[string]any{}
			for _, f := range c.Fields {
				if v, ok := c.Args[f]; ok {
					sub[f] = v
				}
			}
			s += "(" + strings.TrimSuffix(canonical(sub), "}") + ", …})"
		default:
			s += "(" + canonical(c.Args) + ")"
		}
		return s
	})
}

// canonical renders v as compact JSON with sorted keys.
func canonical(v any) string {
	b, err := json.Marshal(normal(v))
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// canonicalJSON renders a JSON document compactly with sorted keys.
func canonicalJSON(b json.RawMessage) string {
	if len(bytes.TrimSpace(b)) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	return canonical(v)
}

// CanonicalArgs renders a tool call's arguments as compact JSON with sorted
// keys, so that they compare as values: "{}" for none, arguments that are
// not JSON as they are.
func CanonicalArgs(b json.RawMessage) string {
	if s := canonicalJSON(b); s != "" {
		return s
	}
	return "{}"
}
