// Package jsonscan reads JSON text in place: whether it is valid as
// encoding/json judges it, where a value ends, and the members of an object,
// without decoding it and without allocating. It serves the hot paths that
// only need to check or to look into a small JSON value (a transfer's
// context, a tool call's arguments); anything it cannot answer exactly is
// left to encoding/json by its callers.
package jsonscan

import (
	"encoding/json"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects accepted, as in
// encoding/json (whose limit is the same): a value nested deeper is invalid.
const MaxDepth = 10000

// Valid reports whether b is one JSON value with optional whitespace around
// it. It answers as [json.Valid] does: invalid UTF-8 inside strings is
// accepted, nesting deeper than [MaxDepth] is not.
func Valid(b []byte) bool {
	end, ok := Value(b, SkipSpace(b, 0), 0)
	return ok && SkipSpace(b, end) == len(b)
}

// SkipSpace returns the index of the first byte of b at or after i that is
// not JSON whitespace (space, tab, line feed, carriage return), or len(b).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Value returns the end of the JSON value that starts at b[i] (whitespace
// before it is not skipped), inside depth enclosing arrays and objects
// (0 at the top level), and whether it is a valid value there.
func Value(b []byte, i, depth int) (end int, ok bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		return object(b, i, depth+1, nil)
	case c == '[':
		return array(b, i, depth+1)
	case c == '"':
		return String(b, i)
	case c == '-' || c >= '0' && c <= '9':
		return Number(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return i, false
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// String returns the end of the string that starts at b[i] (b[i] is its
// opening quote), just after its closing quote, and whether it is a valid
// JSON string: no control character, only JSON's escapes.
func String(b []byte, i int) (end int, ok bool) {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, true
		case c < 0x20:
			return j, false
		case c == '\\':
			j++
			if j >= len(b) {
				return j, false
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-j <= 4 {
					return j, false
				}
				for _, h := range b[j+1 : j+5] {
					if !isHex(h) {
						return j, false
					}
				}
				j += 4
			default:
				return j, false
			}
		}
	}
	return len(b), false
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// Number returns the end of the number that starts at b[i] and whether it
// follows JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func Number(b []byte, i int) (end int, ok bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return i, false
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

func array(b []byte, i, depth int) (int, bool) {
	if depth > MaxDepth {
		return i, false
	}
	i, empty := Open(b, i, ']')
	if empty {
		return i, true
	}
	for {
		end, ok := Value(b, i, depth)
		if !ok {
			return end, false
		}
		var done bool
		if i, done, ok = Next(b, end, ']'); done || !ok {
			return i, ok
		}
	}
}

// object scans the object at b[i] (b[i] == '{'), depth levels deep counting
// itself, calling member (when not nil) for each member.
func object(b []byte, i, depth int, member func(key, value []byte)) (int, bool) {
	if depth > MaxDepth {
		return i, false
	}
	i, empty := Open(b, i, '}')
	if empty {
		return i, true
	}
	for {
		key, next, ok := Key(b, i)
		if !ok {
			return next, false
		}
		i = next
		end, ok := Value(b, i, depth)
		if !ok {
			return end, false
		}
		if member != nil {
			member(key, b[i:end])
		}
		var done bool
		if i, done, ok = Next(b, end, '}'); done || !ok {
			return i, ok
		}
	}
}

// Open returns the index of the first value (of an array) or member (of an
// object) after the opening bracket at b[i], whose closing one is closer;
// of an empty one, the index just after closer, with empty set.
func Open(b []byte, i int, closer byte) (next int, empty bool) {
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == closer {
		return i + 1, true
	}
	return i, false
}

// Key reads the key of an object member at b[i] and the colon after it: the
// key as written between its quotes, and the index of the member's value.
// ok is false when b[i:] does not start so.
func Key(b []byte, i int) (key []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	end, ok := String(b, i)
	if !ok {
		return nil, end, false
	}
	key = b[i+1 : end-1]
	i = SkipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		return nil, i, false
	}
	return key, SkipSpace(b, i+1), true
}

// Next reads what follows a value of an array or object whose closing
// bracket is closer, the value ending at b[i]: after a comma, the index of
// the next value or member; at closer, the index just after it, with done
// set. ok is false on anything else.
func Next(b []byte, i int, closer byte) (next int, done, ok bool) {
	i = SkipSpace(b, i)
	switch {
	case i >= len(b):
		return i, false, false
	case b[i] == ',':
		return SkipSpace(b, i+1), false, true
	case b[i] == closer:
		return i + 1, true, true
	}
	return i, false, false
}

// Members calls member with the key and the value of each member of the
// JSON object b holds, in order, and reports whether b is one valid JSON
// object with optional whitespace around it. The key is given as written
// between its quotes (escapes not decoded: see [Plain]), the value as
// written. member may have been called before a false result; keys that
// repeat are given each time.
func Members(b []byte, member func(key, value []byte)) bool {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	end, ok := object(b, i, 1, member)
	return ok && SkipSpace(b, end) == len(b)
}

// Plain reports whether the contents of a valid JSON string (without its
// quotes) decode to the same bytes: it has no escape and is valid UTF-8
// (encoding/json replaces invalid bytes with U+FFFD).
func Plain(s []byte) bool {
	ascii := true
	for _, c := range s {
		if c == '\\' {
			return false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return ascii || utf8.Valid(s)
}

// Unquote returns the string that the contents s of a valid JSON string
// (without its quotes, as [Members] gives a key) decode to, as
// encoding/json decodes them. It allocates the string.
func Unquote(s []byte) string {
	if Plain(s) {
		return string(s)
	}
	tok := make([]byte, 0, len(s)+2)
	tok = append(append(append(tok, '"'), s...), '"')
	var out string
	_ = json.Unmarshal(tok, &out) // the contents of a valid string: no error
	return out
}
