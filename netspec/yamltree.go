package netspec

import (
	"iter"
	"math"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// The YAML tree as the shape check and the problems' positions read it:
// anchors and aliases, loader paths, scalars and their kinds.

// collectAnchors returns the anchors of the tree by name (the last one wins,
// as with the decoder).
func collectAnchors(root ast.Node) map[string]ast.Node {
	out := map[string]ast.Node{}
	walk(root, func(n ast.Node) {
		if a, ok := n.(*ast.AnchorNode); ok && a.Name != nil {
			out[a.Name.GetToken().Value] = a.Value
		}
	})
	return out
}

// walk calls fn for n and every node below it, without following aliases.
func walk(n ast.Node, fn func(ast.Node)) {
	if n == nil {
		return
	}
	fn(n)
	for c := range children(n) {
		walk(c, fn)
	}
}

// children yields the nodes right below n, without following aliases.
func children(n ast.Node) iter.Seq[ast.Node] {
	return func(yield func(ast.Node) bool) {
		switch v := n.(type) {
		case *ast.DocumentNode:
			yield(v.Body)
		case *ast.MappingNode:
			yieldAll(yield, v.Values)
		case *ast.MappingValueNode:
			_ = yield(v.Key) && yield(v.Value)
		case *ast.MappingKeyNode:
			yield(v.Value)
		case *ast.SequenceNode:
			yieldAll(yield, v.Values)
		default:
			if inner, ok := unwrap(n); ok {
				yield(inner)
			}
		}
	}
}

// expandedSize counts the nodes of n with every alias expanded, stopping
// once the count passes limit.
func expandedSize(n ast.Node, anchors map[string]ast.Node, limit int) int {
	memo := map[ast.Node]int{}
	var size func(n ast.Node) int
	size = func(n ast.Node) int {
		if n == nil {
			return 0
		}
		if v, ok := memo[n]; ok {
			return v
		}
		memo[n] = 1 // an alias to an anchor being counted (a cycle) counts once
		total := 1
		add := func(c ast.Node) {
			if total <= limit {
				total += size(c)
			}
		}
		if v, isAlias := n.(*ast.AliasNode); isAlias {
			if v.Value != nil {
				add(anchors[v.Value.GetToken().Value])
			}
		}
		for c := range children(n) {
			add(c)
		}
		memo[n] = total
		return total
	}
	return size(n)
}

// locate finds the token of a loader path ($, .name, [i]) in the tree: the
// key of a field, the start of a list item. It returns nil when the path is
// not in the tree.
func locate(root ast.Node, anchors map[string]ast.Node, path string) *token.Token {
	rest, ok := strings.CutPrefix(path, "$")
	if !ok {
		return nil
	}
	n := root
	var tk *token.Token
	if n != nil {
		tk = n.GetToken()
	}
	for rest != "" {
		n = deref(n, anchors)
		switch rest[0] {
		case '.':
			end := strings.IndexAny(rest[1:], ".[") + 1
			if end == 0 {
				end = len(rest)
			}
			name := rest[1:end]
			rest = rest[end:]
			m, isMap := n.(*ast.MappingNode)
			if !isMap {
				return nil
			}
			n = nil
			for _, mv := range m.Values {
				if key, _ := scalarText(unwrapKey(mv.Key)); key == name {
					n, tk = mv.Value, mv.Key.GetToken()
				}
			}
			if n == nil {
				return nil
			}
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil
			}
			i, err := strconv.Atoi(rest[1:end])
			rest = rest[end+1:]
			seq, isSeq := n.(*ast.SequenceNode)
			if err != nil || !isSeq || i < 0 || i >= len(seq.Values) {
				return nil
			}
			n = seq.Values[i]
			if n == nil {
				return nil
			}
			tk = n.GetToken()
			if i < len(seq.Entries) && seq.Entries[i] != nil && seq.Entries[i].Start != nil {
				tk = seq.Entries[i].Start // the "-" of a block list
			}
		default:
			return nil
		}
	}
	return tk
}

// deref strips tags and anchors and follows aliases.
func deref(n ast.Node, anchors map[string]ast.Node) ast.Node {
	for range 64 {
		if inner, ok := unwrap(n); ok {
			n = inner
			continue
		}
		v, isAlias := n.(*ast.AliasNode)
		if !isAlias {
			return n
		}
		if v.Value == nil {
			return nil
		}
		n = anchors[v.Value.GetToken().Value]
	}
	return nil
}

// display turns a YAML path into the form problems show: $.agents[0].name
// becomes agents[0].name.
func display(path string) string {
	if path == "$" {
		return "the file"
	}
	return strings.TrimPrefix(path, "$.")
}

// yieldAll yields the nodes of s until yield returns false.
func yieldAll[N ast.Node](yield func(ast.Node) bool, s []N) {
	for _, n := range s {
		if !yield(n) {
			return
		}
	}
}

// unwrapKey strips mapping keys (? key), tags and anchors from n.
func unwrapKey(n ast.Node) ast.Node {
	for {
		if k, isKey := n.(*ast.MappingKeyNode); isKey {
			n = k.Value
		} else if inner, ok := unwrap(n); ok {
			n = inner
		} else {
			return n
		}
	}
}

// unwrap returns the node a tag or an anchor wraps; ok is false when n is
// neither.
func unwrap(n ast.Node) (inner ast.Node, ok bool) {
	switch v := n.(type) {
	case *ast.TagNode:
		return v.Value, true
	case *ast.AnchorNode:
		return v.Value, true
	}
	return n, false
}

// scalarText returns the text of a scalar node.
func scalarText(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		if v.Value == nil {
			return "", true
		}
		return v.Value.Value, true
	case *ast.NullNode:
		return "", true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return n.GetToken().Value, true
	}
	return "", false
}

func isInteger(n ast.Node, bits int) bool {
	lo, hi := float64(math.MinInt64), float64(math.MaxInt64)
	if bits == 32 {
		lo, hi = math.MinInt32, math.MaxInt32
	}
	switch v := n.(type) {
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			return float64(x) >= lo && float64(x) <= hi
		case uint64:
			return float64(x) <= hi
		}
		return false
	case *ast.FloatNode:
		return v.Value == math.Trunc(v.Value) && v.Value >= lo && v.Value < hi
	case *ast.StringNode:
		_, err := strconv.ParseInt(v.Value, 10, bits)
		return err == nil
	}
	return false
}

func isNumber(n ast.Node) bool {
	switch v := n.(type) {
	case *ast.IntegerNode, *ast.FloatNode:
		return true
	case *ast.StringNode:
		_, err := strconv.ParseFloat(v.Value, 64)
		return err == nil
	}
	return false
}

func kindOf(n ast.Node) string {
	switch v := n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "the number " + v.GetToken().Value
	case *ast.BoolNode:
		return v.GetToken().Value
	case nil, *ast.NullNode:
		return "null"
	case *ast.AliasNode:
		return "an alias"
	case *ast.AnchorNode:
		return "an anchor"
	}
	return "a " + strings.ToLower(n.Type().String())
}

func nullToken(n ast.Node) *token.Token {
	tk := token.New("null", "null", &token.Position{})
	if n != nil {
		if t := n.GetToken(); t != nil && t.Position != nil {
			p := *t.Position
			tk.Position = &p
		}
	}
	return tk
}
