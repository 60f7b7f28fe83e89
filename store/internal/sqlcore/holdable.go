package sqlcore

import (
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// This file is what both backends can hold, checked before a statement
// runs, so that SQLite and PostgreSQL refuse the same values with the same
// error (store.ErrInvalid naming the field) instead of SQLite keeping what
// PostgreSQL refuses (SQLSTATE classes 22 and 54):
//
//   - text (ids, names, keys, free text) is valid UTF-8 without NUL: a
//     PostgreSQL text value cannot hold U+0000 (22021);
//   - ids and keys are at most [MaxKeyBytes]: a PostgreSQL index entry holds
//     at most about 2700 bytes (54000), and keys are indexed in pairs;
//   - a JSON value written to a jsonb column (thread and job metadata,
//     summaries, interrupts) holds no \u0000 escape (22P05), no lone UTF-16
//     surrogate such as "\ud800" (22P02), no invalid UTF-8, and no number
//     outside PostgreSQL's numeric range (22003): see [CheckJSON].
//
// Messages' parts, usage and metadata are json (kept as written, on
// PostgreSQL too) and checkpoint states are bytes: both backends keep any
// valid JSON there, so they are not checked beyond validity.

// MaxKeyBytes bounds an id or key the store is given (a field named ID or
// ending in ID, and IdempotencyKey, Hash, Holder, Namespace, Kind): 1024
// bytes.
const MaxKeyBytes = 1024

// checkText returns an ErrInvalid error naming field when s is not text
// both backends hold alike; key bounds its length to [MaxKeyBytes].
func checkText(field, s string, key bool) error {
	switch {
	case !utf8.ValidString(s):
		return invalid("%s is not valid UTF-8", field)
	case strings.IndexByte(s, 0) >= 0:
		return invalid("%s holds a NUL character (U+0000), which the store cannot keep", field)
	case key && len(s) > MaxKeyBytes:
		return invalid("%s is %d bytes long, more than the %d an id or key may have", field, len(s), MaxKeyBytes)
	}
	return nil
}

// checkTexts checks name, value pairs with [checkText], keys by their
// names ([keyField]); prefix is put before each name in the error.
func checkTexts(prefix string, fields ...string) error {
	return checkTextsAt(func() string { return prefix }, fields...)
}

// checkTextsAt is checkTexts with a prefix that is built only for an
// error.
func checkTextsAt(prefix func() string, fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if checkText(fields[i], fields[i+1], keyField(fields[i])) != nil {
			return checkText(prefix()+fields[i], fields[i+1], keyField(fields[i]))
		}
	}
	return nil
}

// keyField reports whether a params field names a row (an id or a key).
func keyField(name string) bool {
	switch name {
	case "IdempotencyKey", "Hash", "Holder", "Namespace", "Kind":
		return true
	}
	return name == "ID" || strings.HasSuffix(name, "ID")
}

// checkParams checks every string field of the params struct p points to
// with [checkText], by name, so that a field added later is checked too.
// Nested values are the callers' to check (messages: [encodeNew]; states:
// SaveCheckpoint; JSON: [CheckJSON]).
func checkParams(p any) error {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil
	}
	v = v.Elem()
	if v.Kind() != reflect.Struct {
		return nil
	}
	for _, f := range stringFieldsOf(v.Type()) {
		if err := checkText(f.name, v.Field(f.index).String(), f.key); err != nil {
			return err
		}
	}
	return nil
}

// stringField is an exported string field of a params struct.
type stringField struct {
	index int
	name  string
	key   bool // keyField(name)
}

// stringFields holds the exported string fields of each params struct
// type checkParams has seen: every call of the store checks its params.
var stringFields sync.Map // reflect.Type -> []stringField

// stringFieldsOf returns the exported string fields of the struct type t.
func stringFieldsOf(t reflect.Type) []stringField {
	if fs, ok := stringFields.Load(t); ok {
		return fs.([]stringField)
	}
	var fs []stringField
	for i := range t.NumField() {
		f := t.Field(i)
		if f.IsExported() && f.Type.Kind() == reflect.String {
			fs = append(fs, stringField{index: i, name: f.Name, key: keyField(f.Name)})
		}
	}
	stringFields.Store(t, fs)
	return fs
}

// PostgreSQL's numeric range (src/backend/utils/adt/numeric.c): at most
// 131072 digits before the decimal point, 16383 after it (as written,
// trailing zeros included), an exponent below INT_MAX/2 in magnitude.
const (
	maxNumericWeight = 131072
	maxNumericScale  = 16383
	maxNumericExp    = 1<<30 - 1
)

// CheckJSON returns an ErrInvalid error naming field when b, valid JSON,
// is not a value PostgreSQL's jsonb holds: invalid UTF-8, a \u0000
// escape, a UTF-16 surrogate escape not in a pair, a number out of
// numeric's range. The offset of the first such byte is in the message.
// pgstore's FuzzCheckJSON holds it to PostgreSQL's own verdict.
func CheckJSON(field string, b []byte) error {
	if !utf8.Valid(b) {
		return invalid("%s is not valid UTF-8", field)
	}
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			end, err := checkJSONString(field, b, i)
			if err != nil {
				return err
			}
			i = end
		case c == '-' || ('0' <= c && c <= '9'):
			end := i + 1
			for end < len(b) && strings.IndexByte("+-.eE0123456789", b[end]) >= 0 {
				end++
			}
			if !numericHolds(string(b[i:end])) {
				return invalid("%s: the number at byte %d is out of the range the store keeps (at most %d digits before the decimal point and %d after)",
					field, i, maxNumericWeight, maxNumericScale)
			}
			i = end - 1
		}
	}
	return nil
}

// checkJSONString checks the JSON string starting at b[start] (its opening
// quote) and returns the offset of its closing quote.
func checkJSONString(field string, b []byte, start int) (end int, err error) {
	pendingHigh := false
	for i := start + 1; i < len(b); i++ {
		switch b[i] {
		case '"':
			if pendingHigh {
				return 0, loneSurrogate(field, i)
			}
			return i, nil
		case '\\':
			if i+1 >= len(b) {
				return len(b), nil
			}
			if b[i+1] != 'u' || i+5 >= len(b) {
				if pendingHigh {
					return 0, loneSurrogate(field, i)
				}
				i++
				continue
			}
			r, perr := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
			if perr != nil {
				return 0, invalid("%s: invalid \\u escape at byte %d", field, i)
			}
			switch {
			case r == 0:
				return 0, invalid("%s holds \\u0000 (NUL) at byte %d, which the store cannot keep", field, i)
			case 0xD800 <= r && r < 0xDC00:
				if pendingHigh {
					return 0, loneSurrogate(field, i)
				}
				pendingHigh = true
			case 0xDC00 <= r && r < 0xE000:
				if !pendingHigh {
					return 0, loneSurrogate(field, i)
				}
				pendingHigh = false
			default:
				if pendingHigh {
					return 0, loneSurrogate(field, i)
				}
			}
			i += 5
		default:
			if pendingHigh {
				return 0, loneSurrogate(field, i)
			}
		}
	}
	return len(b), nil
}

func loneSurrogate(field string, at int) error {
	return invalid("%s holds a UTF-16 surrogate escape (such as \\ud800) that is not part of a pair, before byte %d", field, at)
}

// numericHolds reports whether the JSON number n is in PostgreSQL's
// numeric range.
func numericHolds(n string) bool {
	n = strings.TrimPrefix(n, "-")
	mant, exp := n, int64(0)
	if i := strings.IndexAny(n, "eE"); i >= 0 {
		mant = n[:i]
		e, err := strconv.ParseInt(strings.TrimPrefix(n[i+1:], "+"), 10, 64)
		if err != nil || e >= maxNumericExp || e <= -maxNumericExp {
			return false
		}
		exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	// Digits after the decimal point, as written: numeric keeps them.
	if scale := int64(len(frac)) - exp; scale > maxNumericScale {
		return false
	}
	digits := intPart + frac
	first := strings.IndexFunc(digits, func(r rune) bool { return r != '0' })
	if first < 0 {
		return true // zero
	}
	// The power of ten of the first significant digit.
	weight := int64(len(intPart)) - 1 - int64(first) + exp
	return weight < maxNumericWeight
}
