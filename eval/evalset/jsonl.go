package evalset

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
)

// jsonlHeader is the optional first line of a JSON Lines set.
type jsonlHeader struct {
	Set *struct {
		Version     int    `json:"version"`
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		Network     string `json:"network,omitempty"`
	} `json:"set"`
}

// parseJSONL parses one case a line; blank lines are skipped. The set is
// named after the file unless a header line names it.
func parseJSONL(data []byte, name string) (*Set, error) {
	s := &Set{Version: Version, Name: strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))}
	var ps problems
	lines := map[int]int{} // case → line
	first := true
	for n, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if first {
			first = false
			var h jsonlHeader
			if decodeStrict(line, &h) == nil && h.Set != nil {
				s.Version, s.Name, s.Description, s.Network = h.Set.Version, h.Set.Name, h.Set.Description, h.Set.Network
				continue
			}
		}
		var c Case
		if err := decodeStrict(line, &c); err != nil {
			ps.list = append(ps.list, Problem{Line: n + 1, Message: jsonMessage(err)})
			continue
		}
		c.Line = n + 1
		lines[len(s.Cases)] = n + 1
		s.Cases = append(s.Cases, c)
	}
	if len(ps.list) == 0 {
		ps.locate = func(p string) int {
			if i, ok := caseIndex(p); ok {
				return lines[i]
			}
			return 0
		}
		validateSet(s, &ps, func(i int) string { return at("$.cases", i) })
	}
	if err := ps.err(name); err != nil {
		return nil, err
	}
	normalize(s)
	return s, nil
}

// decodeStrict decodes one JSON value with no unknown fields and nothing
// after it.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

// jsonMessage is a decoding error without encoding/json's prefix.
func jsonMessage(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

// caseIndex returns i of a path under $.cases[i].
func caseIndex(p string) (int, bool) {
	rest, ok := strings.CutPrefix(p, "$.cases[")
	if !ok {
		return 0, false
	}
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return 0, false
	}
	i, err := strconv.Atoi(rest[:end])
	return i, err == nil
}
