package evalset

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// pathSeg is one step of a path: a key, or an index.
type pathSeg struct {
	key   string
	index int // -1 for a key
}

// splitPath splits $.a[1].b into its steps.
func splitPath(p string) []pathSeg {
	rest, _ := strings.CutPrefix(p, "$")
	var out []pathSeg
	for rest != "" {
		switch rest[0] {
		case '.':
			end := strings.IndexAny(rest[1:], ".[") + 1
			if end == 0 {
				end = len(rest)
			}
			out = append(out, pathSeg{key: rest[1:end], index: -1})
			rest = rest[end:]
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return out
			}
			i, err := strconv.Atoi(rest[1:end])
			if err != nil {
				return out
			}
			out = append(out, pathSeg{index: i})
			rest = rest[end+1:]
		default:
			return out
		}
	}
	return out
}

// jsonLine returns the line of path in the JSON document data, or of the
// deepest part of it that is there; 0 when data is not JSON. Keys match in
// snake_case or camelCase, as ADK's models read them.
func jsonLine(data []byte, path string) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	best := int64(-1)
	if err := seek(dec, splitPath(path), 0, &best); err != nil && best < 0 {
		return 0
	}
	if best < 0 {
		best = 0
	}
	return lineAt(data, best)
}

var errFound = errors.New("found")

// seek reads one value of dec, which starts at start, looking for path in
// it; best is the offset of the deepest step found so far.
func seek(dec *json.Decoder, path []pathSeg, start int64, best *int64) error {
	*best = start
	if len(path) == 0 {
		return errFound
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		for dec.More() {
			off := dec.InputOffset()
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := k.(string)
			if path[0].index < 0 && (key == path[0].key || key == camel(path[0].key)) {
				return seek(dec, path[1:], off, best)
			}
			if err := skip(dec); err != nil {
				return err
			}
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			off := dec.InputOffset()
			if path[0].index == i {
				return seek(dec, path[1:], off, best)
			}
			if err := skip(dec); err != nil {
				return err
			}
		}
	}
	return errFound // path goes on below a scalar, or is not there
}

func skip(dec *json.Decoder) error {
	var raw json.RawMessage
	return dec.Decode(&raw)
}

// lineAt returns the line of the first token at or after off.
func lineAt(data []byte, off int64) int {
	for off < int64(len(data)) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
		off++
	}
	off = min(off, int64(len(data)))
	return bytes.Count(data[:off], []byte("\n")) + 1
}

// camel returns snake_case in camelCase: user_content → userContent.
func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// jsonErrorLine returns the line of a decoding error of data, 0 if it has
// no offset.
func jsonErrorLine(data []byte, err error) int {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return bytes.Count(data[:min(se.Offset, int64(len(data)))], []byte("\n")) + 1
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return bytes.Count(data[:min(te.Offset, int64(len(data)))], []byte("\n")) + 1
	}
	return 0
}
