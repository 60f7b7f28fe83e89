package evalset

import (
	"errors"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/batonhq/baton/internal/yamlpath"
)

// maxExpandedNodes bounds the size of a set once its aliases are expanded,
// so that a few lines of anchors cannot make the decoder build gigabytes.
const maxExpandedNodes = 1 << 20

func parseYAML(data []byte, name string) (*Set, error) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, &Error{File: name, Problems: []Problem{yamlProblem(err)}}
	}
	var body ast.Node
	docs := 0
	for _, d := range f.Docs {
		if d != nil && d.Body != nil {
			docs++
			if body == nil {
				body = d.Body
			}
		}
	}
	ps := problems{locate: func(p string) int { return lineOf(f, p) }}
	switch {
	case body == nil:
		ps.add("$", "the set is empty: want version:, name: and cases:")
		return nil, ps.err(name)
	case docs > 1:
		ps.add("$", "an eval set holds one YAML document, not %d", docs)
		return nil, ps.err(name)
	}
	if n := expandedSize(body, maxExpandedNodes); n > maxExpandedNodes {
		ps.add("$", "the set expands to more than %d values through its aliases", maxExpandedNodes)
		return nil, ps.err(name)
	}
	if _, ok := body.(*ast.MappingNode); !ok {
		if _, ok := body.(*ast.MappingValueNode); !ok {
			ps.add("$", "an eval set is a mapping (version:, name:, cases:), not %s", strings.ToLower(body.Type().String()))
			return nil, ps.err(name)
		}
	}
	var s Set
	if err := yaml.NodeToValue(body, &s, yaml.DisallowUnknownField(), yaml.UseJSONUnmarshaler()); err != nil {
		return nil, &Error{File: name, Problems: []Problem{yamlProblem(err)}}
	}
	for i := range s.Cases {
		s.Cases[i].Line = lineOf(f, at("$.cases", i))
	}
	validateSet(&s, &ps, func(i int) string { return at("$.cases", i) })
	if err := ps.err(name); err != nil {
		return nil, err
	}
	normalize(&s)
	return &s, nil
}

// yamlProblem is a parser's or decoder's error as a Problem with its line.
func yamlProblem(err error) Problem {
	var ye yaml.Error
	if errors.As(err, &ye) {
		p := Problem{Message: strings.TrimSpace(ye.GetMessage())}
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			p.Line = tk.Position.Line
		}
		return p
	}
	return Problem{Message: err.Error()}
}

// lineOf returns the line of path in f, or of its nearest parent there.
func lineOf(f *ast.File, path string) int {
	for q := path; q != ""; q = yamlpath.Parent(q) {
		p, err := yaml.PathString(q)
		if err != nil {
			continue
		}
		n, err := p.FilterFile(f)
		if err != nil || n == nil {
			continue
		}
		if tk := n.GetToken(); tk != nil && tk.Position != nil {
			return tk.Position.Line
		}
	}
	return 0
}

// visit adapts a function to ast.Visitor: it descends while fn says so.
type visit func(ast.Node) bool

// Visit implements ast.Visitor.
func (v visit) Visit(n ast.Node) ast.Visitor {
	if n == nil || !v(n) {
		return nil
	}
	return v
}

// expandedSize counts the nodes of root with every alias expanded, up to a
// little past limit.
func expandedSize(root ast.Node, limit int) int {
	anchors := map[string]ast.Node{}
	ast.Walk(visit(func(n ast.Node) bool {
		if a, ok := n.(*ast.AnchorNode); ok && a.Name != nil && a.Value != nil {
			anchors[a.Name.GetToken().Value] = a.Value
		}
		return true
	}), root)
	memo := map[string]int{}
	var size func(ast.Node) int
	size = func(n ast.Node) int {
		total := 0
		ast.Walk(visit(func(n ast.Node) bool {
			total++
			if a, ok := n.(*ast.AliasNode); ok && a.Value != nil {
				name := a.Value.GetToken().Value
				s, done := memo[name]
				if !done {
					memo[name] = 1 // an alias inside its own anchor counts once
					if v := anchors[name]; v != nil {
						s = size(v)
					}
					memo[name] = s
				}
				total += s
			}
			return total <= limit
		}), n)
		return total
	}
	return size(root)
}
