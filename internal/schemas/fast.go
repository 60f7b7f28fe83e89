package schemas

import (
	"github.com/batonhq/baton/internal/jsonscan"
)

// This file is the fast path of [Schema.Validate]: schemas made only of
// type, properties, required, additionalProperties (a boolean), items and
// annotations — what a Go struct's schema ([For]) and most tool and transfer
// schemas are — are checked on the raw JSON in one pass, without decoding
// it and without allocating. The fast path only ever accepts: a value it
// does not accept at once (it does not match, or the fast path cannot be
// sure: escaped or repeated names, an integer with a huge exponent, a
// nesting near encoding/json's limit) goes to the validator, whose verdict
// and message stand. So a value the fast path accepts is one the validator
// accepts (FuzzFastPath holds it to that), and the answers do not change.

// fastNode is a compiled schema of the fast subset.
type fastNode struct {
	// types is the set of JSON types allowed (bits of jsonType); 0 allows any.
	types uint8
	// never is the false schema: nothing matches.
	never bool
	// names are the members that properties or required name.
	names []fastName
	// required has bit i set when names[i] is required.
	required uint64
	// closed is additionalProperties: false.
	closed bool
	// items is the schema of an array's items; nil allows any.
	items *fastNode
}

// fastName is a member of an object named by properties or required.
type fastName struct {
	name string
	// schema is the member's schema; nil allows any.
	schema *fastNode
	// declared is set when properties names it (only required may name
	// others, and additionalProperties: false refuses those).
	declared bool
}

// JSON types as bits of fastNode.types.
const (
	typeNull uint8 = 1 << iota
	typeBoolean
	typeObject
	typeArray
	typeNumber
	typeInteger
	typeString
)

var typeBits = map[string]uint8{"null": typeNull, "boolean": typeBoolean, "object": typeObject, "array": typeArray,
	"number": typeNumber, "integer": typeInteger, "string": typeString}

// annotations are keywords that do not take part in validation.
var annotations = map[string]bool{"description": true, "title": true, "default": true, "examples": true,
	"$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true}

// maxFastDepth bounds the nesting of schemas the fast path compiles.
const maxFastDepth = 32

// compileFast compiles a decoded schema document of the fast subset, or
// returns nil when it uses anything else.
func compileFast(doc any, depth int) *fastNode {
	if depth > maxFastDepth {
		return nil
	}
	switch d := doc.(type) {
	case bool:
		return &fastNode{never: !d}
	case map[string]any:
		n := &fastNode{}
		for k, v := range d {
			if !n.keyword(k, v, depth) {
				return nil
			}
		}
		return n
	}
	return nil
}

// keyword compiles one keyword of a schema object into n, and reports
// whether it is of the fast subset.
func (n *fastNode) keyword(k string, v any, depth int) bool {
	switch k {
	case "type":
		return n.compileType(v)
	case "properties":
		props, ok := v.(map[string]any)
		if !ok {
			return false
		}
		for name, sub := range props {
			s := compileFast(sub, depth+1)
			if s == nil {
				return false
			}
			e := &n.names[n.name(name)]
			e.schema, e.declared = s, true
		}
	case "required":
		req, ok := v.([]any)
		if !ok {
			return false
		}
		for _, r := range req {
			name, ok := r.(string)
			if !ok {
				return false
			}
			n.required |= 1 << n.name(name)
		}
	case "additionalProperties":
		allowed, ok := v.(bool)
		n.closed = !allowed
		return ok
	case "items":
		n.items = compileFast(v, depth+1)
		return n.items != nil
	default:
		return annotations[k]
	}
	return len(n.names) <= 64
}

func (n *fastNode) compileType(v any) bool {
	switch t := v.(type) {
	case string:
		n.types = typeBits[t]
		return n.types != 0
	case []any:
		for _, e := range t {
			s, _ := e.(string)
			if typeBits[s] == 0 {
				return false
			}
			n.types |= typeBits[s]
		}
		return n.types != 0
	}
	return false
}

// name returns the index of member name in n.names, added if new.
func (n *fastNode) name(name string) int {
	if i := n.lookup([]byte(name)); i >= 0 {
		return i
	}
	n.names = append(n.names, fastName{name: name})
	return len(n.names) - 1
}

// any reports whether n allows any valid JSON value.
func (n *fastNode) any() bool {
	return !n.never && n.types == 0 && len(n.names) == 0 && !n.closed && n.items == nil
}

// accepts reports whether b, one JSON value with optional whitespace
// around it, surely matches n.
func (n *fastNode) accepts(b []byte) bool {
	end, ok := n.value(b, jsonscan.SkipSpace(b, 0), 0)
	return ok && jsonscan.SkipSpace(b, end) == len(b)
}

// fastMaxDepth is the nesting the fast path checks; deeper values go to
// the validator (encoding/json refuses beyond jsonscan.MaxDepth).
const fastMaxDepth = 1000

// value checks the value at b[i] inside depth enclosing containers and
// returns its end and whether it surely matches n.
func (n *fastNode) value(b []byte, i, depth int) (int, bool) {
	if n == nil || n.any() {
		if depth >= fastMaxDepth {
			return i, false
		}
		return jsonscan.Value(b, i, depth)
	}
	if n.never || i >= len(b) {
		return i, false
	}
	var t uint8
	switch c := b[i]; {
	case c == '{':
		if !n.allows(typeObject) || depth >= fastMaxDepth {
			return i, false
		}
		return n.object(b, i, depth+1)
	case c == '[':
		if !n.allows(typeArray) || depth >= fastMaxDepth {
			return i, false
		}
		return n.array(b, i, depth+1)
	case c == '"':
		t = typeString
	case c == 't' || c == 'f':
		t = typeBoolean
	case c == 'n':
		t = typeNull
	default:
		end, ok := jsonscan.Number(b, i)
		if !ok {
			return end, false
		}
		if n.allows(typeNumber) {
			return end, true
		}
		return end, n.types&typeInteger != 0 && isInteger(b[i:end])
	}
	if !n.allows(t) {
		return i, false
	}
	return jsonscan.Value(b, i, depth)
}

func (n *fastNode) allows(t uint8) bool { return n.types == 0 || n.types&t != 0 }

// object checks the object at b[i], depth levels deep counting itself.
func (n *fastNode) object(b []byte, i, depth int) (int, bool) {
	var seen uint64
	i, empty := jsonscan.Open(b, i, '}')
	if empty {
		return i, n.required == 0
	}
	for {
		key, next, ok := jsonscan.Key(b, i)
		if !ok {
			return next, false
		}
		i = next
		var schema *fastNode
		k := n.lookup(key)
		switch {
		case k < 0 && !jsonscan.Plain(key):
			return i, false // an escaped name could be one of names: not sure
		case k < 0 && n.closed:
			return i, false
		case k >= 0 && (seen&(1<<k) != 0 || n.closed && !n.names[k].declared):
			return i, false // a repeated name: only the last counts
		case k >= 0:
			seen |= 1 << k
			schema = n.names[k].schema
		}
		end, ok := schema.value(b, i, depth)
		if !ok {
			return end, false
		}
		var done bool
		if i, done, ok = jsonscan.Next(b, end, '}'); done || !ok {
			return i, ok && n.required&^seen == 0
		}
	}
}

func (n *fastNode) lookup(key []byte) int {
	for i := range n.names {
		if n.names[i].name == string(key) {
			return i
		}
	}
	return -1
}

// array checks the array at b[i], depth levels deep counting itself.
func (n *fastNode) array(b []byte, i, depth int) (int, bool) {
	i, empty := jsonscan.Open(b, i, ']')
	if empty {
		return i, true
	}
	for {
		end, ok := n.items.value(b, i, depth)
		if !ok {
			return end, false
		}
		var done bool
		if i, done, ok = jsonscan.Next(b, end, ']'); done || !ok {
			return i, ok
		}
	}
}

// maxExponent bounds the exponents isInteger decides on.
const maxExponent = 1000

// isInteger reports whether the JSON number lit (valid) surely has no
// fractional part, as the validator decides integer: 2, 2.0, 1.5e1 and
// 10e-1 are integers.
func isInteger(lit []byte) bool {
	i := 0
	if lit[0] == '-' {
		i++
	}
	mant := i
	for i < len(lit) && lit[i] != 'e' && lit[i] != 'E' {
		i++
	}
	mantEnd := i
	exp := 0
	if i < len(lit) {
		i++
		neg := lit[i] == '-'
		if lit[i] == '+' || lit[i] == '-' {
			i++
		}
		for ; i < len(lit); i++ {
			exp = exp*10 + int(lit[i]-'0')
			if exp > maxExponent {
				return false // not sure
			}
		}
		if neg {
			exp = -exp
		}
	}
	// The value is the mantissa's digits as an integer times 10^(exp -
	// fraction digits); trailing zeros of the digits raise the power.
	frac, zero := 0, true
	tz := 0
	for j := mant; j < mantEnd; j++ {
		switch c := lit[j]; {
		case c == '.':
			frac = mantEnd - j - 1
		case c == '0':
			tz++
		default:
			zero, tz = false, 0
		}
	}
	return zero || exp-frac+tz >= 0
}
