package sqlcore

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/batonhq/baton/message"
)

// This file writes the metadata objects the store's callers give it
// (continuation placeholders', job runs': strings in one or two levels of
// objects) without encoding/json's reflection: byte for byte what
// json.Marshal writes, or nothing, leaving the value to json.Marshal.
// FuzzAppendMetadata holds the two to each other. Usages are written the
// same way (appendUsage).

// maxMetadataDepth bounds the objects appendObject writes inside one
// another; deeper values are left to json.Marshal.
const maxMetadataDepth = 4

// appendObject appends the JSON of m as json.Marshal writes it (names in
// sorted order, strings escaped as [appendJSONString] does) when every
// value is a string, a bool, nil, an int, an int64, a finite float64, a
// map[string]string or a map[string]any of such values, and reports false, with dst unchanged in its length,
// for anything else.
func appendObject(dst []byte, m map[string]any, depth int) ([]byte, bool) {
	if m == nil {
		return append(dst, "null"...), true
	}
	if depth > maxMetadataDepth {
		return dst, false
	}
	start := len(dst)
	var buf [8]string
	dst = append(dst, '{')
	for i, k := range sortedKeys(m, buf[:0]) {
		dst = appendName(dst, i, k)
		var ok bool
		switch v := m[k].(type) {
		case nil:
			dst = append(dst, "null"...)
		case string:
			dst = appendJSONString(dst, v)
		case bool:
			if v {
				dst = append(dst, "true"...)
			} else {
				dst = append(dst, "false"...)
			}
		case int:
			dst = strconv.AppendInt(dst, int64(v), 10)
		case int64:
			dst = strconv.AppendInt(dst, v, 10)
		case float64:
			if dst, ok = appendFloat(dst, v); !ok {
				return dst[:start], false
			}
		case map[string]any:
			if dst, ok = appendObject(dst, v, depth+1); !ok {
				return dst[:start], false
			}
		case map[string]string:
			dst = appendStrings(dst, v)
		default:
			return dst[:start], false
		}
	}
	return append(dst, '}'), true
}

// appendStrings appends m as json.Marshal writes it.
func appendStrings(dst []byte, m map[string]string) []byte {
	if m == nil {
		return append(dst, "null"...)
	}
	var buf [8]string
	dst = append(dst, '{')
	for i, k := range sortedKeys(m, buf[:0]) {
		dst = appendName(dst, i, k)
		dst = appendJSONString(dst, m[k])
	}
	return append(dst, '}')
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
	dst = appendJSONString(dst, name)
	return append(dst, ':')
}

// appendJSONString appends s as a JSON string the way encoding/json
// writes one (its appendString with HTML escaping): ", \ and the control
// characters escaped (\b \f \n \r \t, the others as \u00XX), <, > and &
// as \u003c \u003e \u0026, invalid UTF-8 as \ufffd, U+2028 and U+2029 as
// \u2028 and \u2029.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
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

// appendFloat appends f as encoding/json writes a float64 (ES6's number
// to string: %f, or %e outside [1e-6, 1e21) with its exponent unpadded),
// and reports false for what it refuses (NaN, ±Inf).
func appendFloat(dst []byte, f float64) ([]byte, bool) {
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

// appendUsage appends u as json.Marshal writes it: its fields in order,
// those that are 0 left out (omitempty).
func appendUsage(dst []byte, u *message.Usage) []byte {
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
