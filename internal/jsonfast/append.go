package jsonfast

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/batonhq/baton/message"
)

// The appenders below write values without encoding/json's reflection:
// byte for byte what json.Marshal writes, or, for what one does not know
// (the functions that report false), nothing, leaving the value to
// json.Marshal. Their callers' fuzz targets hold them to json.Marshal
// (sqlcore FuzzAppendMetadata and FuzzAppendUsage, runstate
// FuzzEncodeFast, FuzzAppendRaw here).

// maxObjectDepth bounds the objects AppendObject writes inside one
// another; deeper values are left to json.Marshal.
const maxObjectDepth = 4

// AppendObject appends the JSON of m as json.Marshal writes it (names in
// sorted order, strings escaped as [AppendString] does) when every
// value is a string, a bool, nil, an int, an int64, a finite float64, a
// map[string]string or a map[string]any of such values, and reports false, with dst unchanged in its length,
// for anything else.
func AppendObject(dst []byte, m map[string]any, depth int) ([]byte, bool) {
	if m != nil && depth > maxObjectDepth {
		return dst, false
	}
	return appendMembers(dst, m, depth, appendValue)
}

// appendValue appends v, a value of an object at depth, as [AppendObject]
// does, or reports false.
func appendValue(dst []byte, v any, depth int) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return AppendString(dst, v), true
	case bool:
		return strconv.AppendBool(dst, v), true
	case int:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int64:
		return strconv.AppendInt(dst, v, 10), true
	case float64:
		return AppendFloat(dst, v)
	case map[string]any:
		return AppendObject(dst, v, depth+1)
	case map[string]string:
		return AppendStrings(dst, v), true
	}
	return dst, false
}

// AppendStrings appends m as json.Marshal writes it.
func AppendStrings(dst []byte, m map[string]string) []byte {
	dst, _ = appendMembers(dst, m, 0, func(dst []byte, v string, _ int) ([]byte, bool) { return AppendString(dst, v), true })
	return dst
}

// appendMembers appends m as json.Marshal writes a map (null for nil,
// names in sorted order), each value as value writes it (given depth),
// and reports false, with dst unchanged in its length, when value does.
func appendMembers[V any](dst []byte, m map[string]V, depth int, value func([]byte, V, int) ([]byte, bool)) ([]byte, bool) {
	if m == nil {
		return append(dst, "null"...), true
	}
	start := len(dst)
	var buf [8]string
	dst = append(dst, '{')
	for i, k := range sortedKeys(m, buf[:0]) {
		dst = appendName(dst, i, k)
		var ok bool
		if dst, ok = value(dst, m[k], depth); !ok {
			return dst[:start], false
		}
	}
	return append(dst, '}'), true
}

// sortedKeys appends m's keys to keys, sorted as json.Marshal writes them.
func sortedKeys[V any](m map[string]V, keys []string) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// appendName appends the name of an object's i-th member, and the comma
// before it.
func appendName(dst []byte, i int, name string) []byte {
	if i > 0 {
		dst = append(dst, ',')
	}
	dst = AppendString(dst, name)
	return append(dst, ':')
}

// plain are the ASCII bytes AppendString writes as they are.
var plain = func() (t [utf8.RuneSelf]bool) {
	for b := byte(0x20); b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// AppendString appends s as a JSON string the way encoding/json
// writes one (its appendString with HTML escaping): ", \ and the control
// characters escaped (\b \f \n \r \t, the others as \u00XX), <, > and &
// as \u003c \u003e \u0026, invalid UTF-8 as \ufffd, U+2028 and U+2029 as
// \u2028 and \u2029.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if plain[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendFloat appends f as encoding/json writes a float64 (ES6's number
// to string: %f, or %e outside [1e-6, 1e21) with its exponent unpadded),
// and reports false for what it refuses (NaN, ±Inf).
func AppendFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if n := len(dst); format == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		// e-09 as e-9
		dst[n-2] = dst[n-1]
		dst = dst[:n-1]
	}
	return dst, true
}

// AppendUsage appends u as json.Marshal writes it: its fields in order,
// those that are 0 left out (omitempty).
func AppendUsage(dst []byte, u *message.Usage) []byte {
	dst = append(dst, '{')
	first := true
	for _, f := range [...]struct {
		name string
		n    int64
	}{
		{"input_tokens", u.InputTokens}, {"output_tokens", u.OutputTokens}, {"cached_tokens", u.CachedTokens},
		{"cache_creation_tokens", u.CacheCreationTokens}, {"reasoning_tokens", u.ReasoningTokens},
	} {
		if f.n == 0 {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, f.name...)
		dst = append(dst, '"', ':')
		dst = strconv.AppendInt(dst, f.n, 10)
	}
	return append(dst, '}')
}

// AppendRaw appends raw, a json.RawMessage, as json.Marshal writes one:
// null for nil, else compacted (whitespace between tokens left out) with
// <, >, &, U+2028 and U+2029 escaped as in strings; it reports false,
// with dst unchanged in its length, when raw is not valid JSON (which
// json.Marshal refuses).
func AppendRaw(dst []byte, raw json.RawMessage) ([]byte, bool) {
	if raw == nil {
		return append(dst, "null"...), true
	}
	if !json.Valid(raw) {
		return dst, false
	}
	const hex = "0123456789abcdef"
	inString := false
	start := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, raw[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			start = i + 1
		case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8:
			dst = append(dst, raw[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[raw[i+2]&0xF])
			i += 2
			start = i + 1
		case inString:
			if c == '\\' {
				i++ // the escaped byte: none of the above in valid JSON
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			dst = append(dst, raw[start:i]...)
			start = i + 1
		}
	}
	return append(dst, raw[start:]...), true
}

// AppendRawMap appends m as json.Marshal writes a map[string]json.RawMessage
// (names in sorted order, each value as [AppendRaw] writes it), and
// reports false, with dst unchanged in its length, when a value is not
// valid JSON.
func AppendRawMap(dst []byte, m map[string]json.RawMessage) ([]byte, bool) {
	return appendMembers(dst, m, 0, func(dst []byte, v json.RawMessage, _ int) ([]byte, bool) { return AppendRaw(dst, v) })
}

// AppendBytes appends b as json.Marshal writes a []byte: null for nil,
// else a string of its standard base64 encoding.
func AppendBytes(dst []byte, b []byte) []byte {
	if b == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// AppendStringList appends l as json.Marshal writes a []string: null for
// nil.
func AppendStringList(dst []byte, l []string) []byte {
	if l == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range l {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, s)
	}
	return append(dst, ']')
}
