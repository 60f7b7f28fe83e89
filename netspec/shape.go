package netspec

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"

	"github.com/goccy/go-yaml/ast"
)

// The shape check runs before decoding. It compares the YAML tree with the
// Go types it decodes into, reports every unknown field (a typo) and every
// value of the wrong type with its line, and takes those values out of the
// tree, so that decoding cannot stop at the first of them and the checks that
// follow still find every other problem of the file.

// maxExpandedNodes bounds a document's size once its aliases are expanded
// (the "billion laughs" of YAML): decoding and fingerprinting expand them.
const maxExpandedNodes = 1 << 20

var textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()

type shaper struct {
	l       *loader
	anchors map[string]ast.Node
	// checked records anchors already checked against a type, so that an
	// alias is checked (and reported) once, whatever its number of uses.
	checked map[anchorCheck]bool
}

type anchorCheck struct {
	name string
	t    reflect.Type
}

var transferSpecType = reflect.TypeFor[TransferSpec]()

func (s *shaper) bad(n ast.Node, path, format string, args ...any) {
	p := Problem{Path: path, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		if tk := n.GetToken(); tk != nil && tk.Position != nil {
			p.Line, p.Column = tk.Position.Line, tk.Position.Column
		}
	}
	if p.Line == 0 {
		p.Line, p.Column = s.l.lineOf(path)
	}
	s.l.problems = append(s.l.problems, p)
}

// resolve strips tags and anchors and follows an alias. It returns nil for a
// null value, and done when n was already checked against t through an
// earlier use of its anchor.
func (s *shaper) resolve(n ast.Node, t reflect.Type, path string) (out ast.Node, done, ok bool) {
	for i := 0; i < 64; i++ {
		switch v := n.(type) {
		case nil, *ast.NullNode:
			return nil, false, true
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			if v.Name != nil {
				k := anchorCheck{v.Name.GetToken().Value, t}
				if s.checked[k] {
					return nil, true, true
				}
				s.checked[k] = true
			}
			n = v.Value
		case *ast.AliasNode:
			if v.Value == nil {
				return nil, false, false
			}
			name := v.Value.GetToken().Value
			target, found := s.anchors[name]
			if !found {
				s.bad(v, path, "%s: unknown alias *%s", display(path), name)
				return nil, false, false
			}
			k := anchorCheck{name, t}
			if s.checked[k] {
				return nil, true, true
			}
			s.checked[k] = true
			n = target
		default:
			return n, false, true
		}
	}
	s.bad(n, path, "%s: aliases nest too deep", display(path))
	return nil, false, false
}

// check reports what in n does not fit t and removes it. It returns false
// when n as a whole does not fit: the caller then removes n.
func (s *shaper) check(n ast.Node, t reflect.Type, path string) bool {
	orig := n
	n, done, ok := s.resolve(n, t, path)
	if !ok {
		return false
	}
	if done || n == nil {
		return true
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		text, isScalar := scalarText(n)
		if !isScalar {
			s.bad(orig, path, "%s must be a single value, not %s", display(path), kindOf(n))
			return false
		}
		if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(text)); err != nil {
			s.bad(orig, path, "%s: %v", display(path), err)
			return false
		}
		return true
	}
	switch t.Kind() {
	case reflect.Pointer:
		return s.check(n, t.Elem(), path)
	case reflect.Interface:
		return s.anyValue(n, path)
	case reflect.Struct:
		return s.structValue(orig, n, t, path)
	case reflect.Map:
		m, isMap := n.(*ast.MappingNode)
		if !isMap {
			s.bad(orig, path, "%s must be a mapping, not %s", display(path), kindOf(n))
			return false
		}
		return s.anyMapping(m, path)
	case reflect.Slice:
		seq, isSeq := n.(*ast.SequenceNode)
		if !isSeq {
			s.bad(orig, path, "%s must be a list, not %s", display(path), kindOf(n))
			return false
		}
		for i, e := range seq.Values {
			if !s.check(e, t.Elem(), at(path, i)) {
				seq.Values[i] = ast.Null(nullToken(e))
			}
		}
		return true
	case reflect.String:
		if _, isScalar := scalarText(n); !isScalar {
			s.bad(orig, path, "%s must be a string, not %s", display(path), kindOf(n))
			return false
		}
		return true
	case reflect.Bool:
		if _, isBool := n.(*ast.BoolNode); !isBool {
			s.bad(orig, path, "%s must be true or false, not %s", display(path), kindOf(n))
			return false
		}
		return true
	case reflect.Int, reflect.Int64, reflect.Int32:
		if !isInteger(n, t.Bits()) {
			s.bad(orig, path, "%s must be a whole number, not %s", display(path), kindOf(n))
			return false
		}
		return true
	case reflect.Float64, reflect.Float32:
		if !isNumber(n) {
			s.bad(orig, path, "%s must be a number, not %s", display(path), kindOf(n))
			return false
		}
		return true
	}
	return true
}

// fieldsOf maps the YAML names of a struct's fields, inlined ones included,
// to their types.
var fieldsCache sync.Map // reflect.Type -> map[string]reflect.Type

func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if v, ok := fieldsCache.Load(t); ok {
		return v.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct {
			for k, v := range fieldsOf(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	fieldsCache.Store(t, out)
	return out
}

func (s *shaper) structValue(orig, n ast.Node, t reflect.Type, path string) bool {
	m, isMap := n.(*ast.MappingNode)
	if !isMap {
		s.bad(orig, path, "%s must be a mapping, not %s", display(path), kindOf(n))
		return false
	}
	fields := fieldsOf(t)
	s.entries(m, t, path, func(key string, mv *ast.MappingValueNode) bool {
		ft, known := fields[key]
		if !known {
			msg := fmt.Sprintf("unknown field %q in %s", key, display(path))
			if now, ok := renamed[key]; ok && fields[now] != nil {
				msg += fmt.Sprintf(" (it is now %q)", now)
			} else if hint := closest(key, fields); hint != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", hint)
			}
			s.bad(mv.Key, field(path, key), "%s", msg)
			return false
		}
		fp := field(path, key)
		if t == transferSpecType && key == "transforms" {
			// []any: a transform is a name or a name with options.
			return s.transforms(mv.Value, fp)
		}
		return s.check(mv.Value, ft, fp)
	})
	return true
}

// entries checks the entries of m and removes those that fail: the value of
// a merge key must be a mapping of t (of anything when t is nil), another
// key must be a name, and its entry must pass value.
func (s *shaper) entries(m *ast.MappingNode, t reflect.Type, path string, value func(key string, mv *ast.MappingValueNode) bool) {
	kept := m.Values[:0:0]
	for _, mv := range m.Values {
		if mv == nil {
			continue
		}
		ok := false
		if _, isMerge := mv.Key.(*ast.MergeKeyNode); isMerge {
			ok = s.merge(mv.Value, t, path)
		} else if key, isScalar := scalarText(unwrapKey(mv.Key)); isScalar {
			ok = value(key, mv)
		} else {
			s.bad(mv.Key, path, "%s: a key must be a name, not %s", display(path), kindOf(unwrapKey(mv.Key)))
		}
		if ok {
			kept = append(kept, mv)
		}
	}
	m.Values = kept
}

// merge checks the value of a merge key (<<: *base) against the struct t,
// or as a free-form mapping when t is nil.
func (s *shaper) merge(v ast.Node, t reflect.Type, path string) bool {
	n, done, ok := s.resolve(v, t, path)
	if !ok {
		return false
	}
	if done || n == nil {
		return true
	}
	if _, isMap := n.(*ast.MappingNode); !isMap {
		s.bad(v, path, "%s: a merge key (<<) takes one mapping or an alias to one, not %s", display(path), kindOf(n))
		return false
	}
	if t == nil {
		return s.anyValue(n, path)
	}
	return s.structValue(v, n, t, path)
}

// anyValue checks a free-form value (a JSON Schema, a fixed tool result,
// tool call arguments): every mapping key must be a plain name.
func (s *shaper) anyValue(n ast.Node, path string) bool {
	switch v := n.(type) {
	case *ast.MappingNode:
		return s.anyMapping(v, path)
	case *ast.SequenceNode:
		for i, e := range v.Values {
			e, done, ok := s.resolve(e, nil, at(path, i))
			if !ok {
				v.Values[i] = ast.Null(nullToken(v.Values[i]))
				continue
			}
			if done || e == nil {
				continue
			}
			if !s.anyValue(e, at(path, i)) {
				v.Values[i] = ast.Null(nullToken(v.Values[i]))
			}
		}
	}
	return true
}

func (s *shaper) anyMapping(m *ast.MappingNode, path string) bool {
	s.entries(m, nil, path, func(key string, mv *ast.MappingValueNode) bool {
		fp := field(path, key)
		n, done, ok := s.resolve(mv.Value, nil, fp)
		return ok && (done || n == nil || s.anyValue(n, fp))
	})
	return true
}

// transformSpecs are the options of the transforms that take some.
var transformSpecs = map[string]reflect.Type{
	"redact":  reflect.TypeFor[redactSpec](),
	"compact": reflect.TypeFor[compactSpec](),
}

// transforms checks a transfer's transforms: names, or one-key mappings from
// a name to its options.
func (s *shaper) transforms(v ast.Node, path string) bool {
	n, _, ok := s.resolve(v, nil, path)
	if !ok {
		return false
	}
	if n == nil {
		return true
	}
	seq, isSeq := n.(*ast.SequenceNode)
	if !isSeq {
		s.bad(v, path, "%s must be a list, not %s", display(path), kindOf(n))
		return false
	}
	for i, e := range seq.Values {
		ep := at(path, i)
		en, _, ok := s.resolve(e, nil, ep)
		if !ok {
			seq.Values[i] = ast.Null(nullToken(e))
			continue
		}
		m, isMap := en.(*ast.MappingNode)
		if !isMap || len(m.Values) != 1 {
			if !s.anyValue(en, ep) {
				seq.Values[i] = ast.Null(nullToken(e))
			}
			continue // the loader reports what is wrong with it
		}
		mv := m.Values[0]
		name, _ := scalarText(unwrapKey(mv.Key))
		t, hasOptions := transformSpecs[name]
		if !hasOptions {
			s.anyValue(en, ep)
			continue
		}
		if !s.check(mv.Value, t, field(ep, name)) {
			mv.Value = ast.Null(nullToken(mv.Value))
		}
	}
	return true
}

// closest returns the known name nearest to name, if it is near enough to
// be a typo of it.
// renamed maps keys of older files to their names now: agent → agent
// handoffs became transfers.
var renamed = map[string]string{"handoffs": "transfers", "max_handoffs": "max_transfers"}

func closest(name string, fields map[string]reflect.Type) string {
	best, bestD := "", 3
	if len(name) <= 4 {
		bestD = 2
	}
	for _, k := range sortedKeys(fields) {
		if d := editDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" && len(name) >= 3 {
		for _, k := range sortedKeys(fields) {
			if strings.HasPrefix(k, name) || strings.HasPrefix(name, k) && len(k) >= 3 {
				return k
			}
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return math.MaxInt
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
