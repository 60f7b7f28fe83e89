package evalset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/batonhq/baton/internal/schemas"
)

// Format is the format of a set's file.
type Format string

// Formats.
const (
	// FormatYAML is baton's eval set in YAML (JSON too: it is YAML).
	FormatYAML Format = "yaml"
	// FormatJSONL is JSON Lines: one case a line, after an optional first
	// line {"set": {"version": 1, "name": …}}.
	FormatJSONL Format = "jsonl"
	// FormatADK is Google ADK's evalset JSON (EvalSet, EvalCase,
	// Invocation), read by [ParseADK].
	FormatADK Format = "adk"
)

// FormatOf returns the format of a file named name holding data: by its
// extension (.yaml, .yml, .jsonl, .ndjson; .json is ADK's evalset when it
// has eval_set_id or eval_cases, else baton's set), else by its content.
func FormatOf(name string, data []byte) Format {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml":
		return FormatYAML
	case ".jsonl", ".ndjson":
		return FormatJSONL
	}
	if looksADK(data) {
		return FormatADK
	}
	trimmed := bytes.TrimSpace(data)
	if bytes.HasPrefix(trimmed, []byte("{")) && strings.ToLower(filepath.Ext(name)) != ".json" {
		if first, _, ok := bytes.Cut(trimmed, []byte("\n")); ok && json.Valid(first) {
			return FormatJSONL
		}
	}
	return FormatYAML
}

// looksADK reports whether data is a JSON object with ADK's evalset keys
// (or, when it is not valid JSON, mentions them: its errors are then
// reported as an evalset's).
func looksADK(data []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		trimmed := bytes.TrimSpace(data)
		return bytes.HasPrefix(trimmed, []byte("{")) && (bytes.Contains(data, []byte(`"eval_set_id"`)) || bytes.Contains(data, []byte(`"eval_cases"`)))
	}
	return has(top, "eval_set_id") || has(top, "eval_cases")
}

// Load reads and parses the set in a file, in the format of [FormatOf]. An
// ADK evalset is scored by the criteria of the test_config.json beside it,
// as `adk eval` does, else by ADK's default criteria ([ParseADKWith]); the
// criteria baton eval does not score are the set's Warnings.
func Load(path string) (*Set, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("evalset: %w", err)
	}
	f := FormatOf(path, data)
	if f != FormatADK {
		return ParseFormat(data, path, f)
	}
	config, err := loadADKConfig(path)
	if err != nil {
		return nil, err
	}
	s, err := ParseADKWith(data, path, config)
	if err != nil {
		return nil, err
	}
	if config != nil {
		s.Warnings = config.Warnings()
	}
	return s, nil
}

// Parse parses a set named name (a file name: its extension chooses the
// format, see [FormatOf]). A malformed set is an *[Error] with every
// problem found and its line.
func Parse(data []byte, name string) (*Set, error) {
	return ParseFormat(data, name, FormatOf(name, data))
}

// ParseFormat parses a set in format f.
func ParseFormat(data []byte, name string, f Format) (*Set, error) {
	switch f {
	case FormatYAML:
		return parseYAML(data, name)
	case FormatJSONL:
		return parseJSONL(data, name)
	case FormatADK:
		return ParseADK(data, name)
	}
	return nil, fmt.Errorf("evalset: unknown format %q (want yaml, jsonl or adk)", f)
}

// Problem is one thing wrong with a set.
type Problem struct {
	// Line is the problem's line in the file, 0 when unknown.
	Line int
	// Path is where it is, like $.cases[1].turns[0].expect.tools.match.
	Path    string
	Message string
}

// String is the problem as a line: "line N: $.path: message".
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		b.WriteString("line " + strconv.Itoa(p.Line) + ": ")
	}
	if p.Path != "" && p.Path != "$" {
		b.WriteString(p.Path + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Error lists every problem of a set, by line.
type Error struct {
	File     string
	Problems []Problem
}

// Error lists the problems, one a line after the first.
func (e *Error) Error() string {
	var b strings.Builder
	name := e.File
	if name == "" {
		name = "eval set"
	}
	b.WriteString(name + ": ")
	if len(e.Problems) == 1 {
		b.WriteString(e.Problems[0].String())
		return b.String()
	}
	fmt.Fprintf(&b, "%d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}

// ErrInvalid is wrapped by every *Error: errors.Is(err, ErrInvalid) tells a
// malformed set from a file that cannot be read.
var ErrInvalid = errors.New("evalset: invalid eval set")

// Is reports ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// problems collects problems at paths; locate finds their lines.
type problems struct {
	list   []Problem
	locate func(path string) int
}

func (ps *problems) add(path, format string, args ...any) {
	p := Problem{Path: path, Message: fmt.Sprintf(format, args...)}
	if ps.locate != nil {
		p.Line = ps.locate(path)
	}
	ps.list = append(ps.list, p)
}

// err returns the problems as an *Error sorted by line, or nil.
func (ps *problems) err(file string) error {
	if len(ps.list) == 0 {
		return nil
	}
	sort.SliceStable(ps.list, func(i, j int) bool { return ps.list[i].Line < ps.list[j].Line })
	return &Error{File: file, Problems: ps.list}
}

func at(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// Validate checks a set as its parsers do; a set built in Go should pass it
// before it is run.
func Validate(s *Set) error {
	var ps problems
	validateSet(s, &ps, func(int) string { return "$" })
	return ps.err(s.Name)
}

// validateSet checks s; casePath gives the path of case i (JSON Lines
// cases are each their own document).
func validateSet(s *Set, ps *problems, casePath func(i int) string) {
	if s.Version != Version {
		ps.add("$.version", "version must be %d (got %d)", Version, s.Version)
	}
	if len(s.Cases) == 0 {
		ps.add("$.cases", "the set has no cases")
	}
	seen := map[string]int{}
	for i := range s.Cases {
		c := &s.Cases[i]
		p := casePath(i)
		if c.ID == "" {
			ps.add(p+".id", "case %d has no id", i+1)
		} else if j, dup := seen[c.ID]; dup {
			ps.add(p+".id", "case id %q is used by case %d too", c.ID, j+1)
		} else {
			seen[c.ID] = i
		}
		validateCase(c, p, ps)
		// YAML makes JSON of the values held as JSON (arguments, contexts)
		// as it reads them, and may make what is not JSON.
		if _, err := marshal(c); err != nil {
			ps.add(p, "case %d holds a value that is not JSON: %v", i+1, strings.TrimPrefix(err.Error(), "evalset: write: "))
		}
	}
}

func validateCase(c *Case, p string, ps *problems) {
	if len(c.Turns) == 0 {
		ps.add(p+".turns", "case %q has no turns", c.ID)
	}
	for i := range c.Turns {
		t := &c.Turns[i]
		tp := at(p+".turns", i)
		if strings.TrimSpace(t.User) == "" {
			ps.add(tp+".user", "turn %d has no user message", i+1)
		}
		for j, d := range t.Decisions {
			switch d.Type {
			case DecisionApprove, DecisionReject:
			case DecisionEdit:
				if !isObject(d.Args) {
					ps.add(at(tp+".decisions", j)+".args", "an edit decision needs args, a JSON object")
				}
			default:
				ps.add(at(tp+".decisions", j)+".type", "decision type %q: want approve, reject or edit", d.Type)
			}
		}
		if t.Expect != nil {
			validateExpect(t.Expect, tp+".expect", ps)
		}
	}
	if r := c.Recording; r != nil {
		validateRecording(r, len(c.Turns), p+".recording", ps)
	}
}

// Statuses a turn can end with.
var statuses = []string{"completed", "interrupted", "failed", "cancelled", "suspended"}

func validateExpect(e *Expect, p string, ps *problems) {
	if e.Status != "" && !slices.Contains(statuses, e.Status) {
		ps.add(p+".status", "status %q: want one of %s", e.Status, strings.Join(statuses, ", "))
	}
	if e.Transfers != nil {
		for i, t := range *e.Transfers {
			if t.To == "" {
				ps.add(at(p+".transfers", i)+".to", "an expected transfer needs to:")
			}
			if !jsonable(t.Context) {
				ps.add(at(p+".transfers", i)+".context", "the context is not JSON (a number that is not finite?)")
			}
		}
	}
	if t := e.Tools; t != nil {
		if _, ok := NormalizeMatch(t.Match); !ok {
			ps.add(p+".tools.match", "match %q: want exact, in_order or any_order", t.Match)
		}
		for i, c := range t.Calls {
			cp := at(p+".tools.calls", i)
			if c.Name == "" {
				ps.add(cp+".name", "an expected tool call needs a name")
			}
			if len(c.Fields) > 0 && c.Args == nil {
				ps.add(cp+".fields", "fields: compares fields of args:, which is missing")
			}
			if !jsonable(c.Args) {
				ps.add(cp+".args", "the arguments are not JSON (a number that is not finite?)")
			}
		}
	}
	if a := e.Answer; a != nil {
		validateAnswer(a, p+".answer", ps)
	}
}

func validateAnswer(a *AnswerExpect, p string, ps *problems) {
	if a.Regex != "" {
		if _, err := regexp.Compile(a.Regex); err != nil {
			ps.add(p+".regex", "invalid regular expression: %v", err)
		}
	}
	if a.JSONSchema != nil {
		b, err := marshal(a.JSONSchema)
		if err == nil {
			_, err = schemas.Compile(b)
		}
		if err != nil {
			ps.add(p+".json_schema", "%v", err)
		}
	}
	if r := a.ROUGE1; r != nil {
		if strings.TrimSpace(r.Reference) == "" {
			ps.add(p+".rouge1.reference", "ROUGE-1 needs a reference answer")
		}
		if !unit(r.Threshold) {
			ps.add(p+".rouge1.threshold", "threshold %v: want a number from 0 to 1", r.Threshold)
		}
	}
	for i, r := range a.Rubrics {
		rp := at(p+".rubrics", i)
		if strings.TrimSpace(r.Text) == "" {
			ps.add(rp+".text", "a rubric needs its text")
		}
		if !unit(r.Threshold) {
			ps.add(rp+".threshold", "threshold %v: want a number from 0 to 1", r.Threshold)
		}
	}
}

func validateRecording(r *Recording, turns int, p string, ps *problems) {
	if r.Version != RecordingVersion {
		ps.add(p+".version", "recording version must be %d (got %d)", RecordingVersion, r.Version)
	}
	if len(r.Turns) > turns {
		ps.add(p+".turns", "the recording has %d turns, the case %d", len(r.Turns), turns)
	}
	for i := range r.Turns {
		o := &r.Turns[i]
		tp := at(p+".turns", i)
		for j := range o.ModelCalls {
			mc := &o.ModelCalls[j]
			if mc.Agent == "" {
				ps.add(at(tp+".model_calls", j)+".agent", "a recorded model call needs its agent")
			}
			if !jsonable(mc.Message.Metadata) {
				ps.add(at(tp+".model_calls", j)+".message.metadata", "the metadata is not JSON (a number that is not finite?)")
			}
		}
		for j := range o.Tools {
			if o.Tools[j].Name == "" {
				ps.add(at(tp+".tools", j)+".name", "a recorded tool call needs its name")
			}
		}
	}
}

// NormalizeMatch returns a tool trajectory match mode in its canonical
// form (exact, in_order, any_order; "" is exact; ADK's EXACT, IN_ORDER and
// ANY_ORDER are accepted), and whether it is one.
func NormalizeMatch(m string) (string, bool) {
	switch strings.ToLower(strings.ReplaceAll(m, "-", "_")) {
	case "", MatchExact:
		return MatchExact, true
	case MatchInOrder:
		return MatchInOrder, true
	case MatchAnyOrder:
		return MatchAnyOrder, true
	}
	return "", false
}

// unit reports whether x is a number from 0 to 1.
func unit(x float64) bool { return x >= 0 && x <= 1 }

// jsonable reports whether v encodes as JSON (YAML has numbers that JSON
// has not: .inf, .nan).
func jsonable(v any) bool {
	_, err := marshal(v)
	return err == nil
}

// isObject reports whether b is a JSON object.
func isObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}

// normalize gives the recorded messages' metadata the JSON types a stored
// message has (numbers as float64), whatever format they were read from:
// the scripted model finds its place by them.
func normalize(s *Set) {
	for i := range s.Cases {
		r := s.Cases[i].Recording
		if r == nil {
			continue
		}
		for j := range r.Turns {
			for k := range r.Turns[j].ModelCalls {
				m := &r.Turns[j].ModelCalls[k].Message
				if len(m.Metadata) == 0 {
					continue
				}
				b, err := json.Marshal(m.Metadata)
				var md map[string]any
				if err == nil && json.Unmarshal(b, &md) == nil {
					m.Metadata = md
				}
			}
		}
	}
}
