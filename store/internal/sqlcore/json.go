package sqlcore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/batonhq/baton/internal/jsonfast"
)

// encodeNamespaces encodes a namespace → JSON map as a JSON object, checking
// each value is valid JSON. nil is "{}".
func encodeNamespaces(field string, m map[string]json.RawMessage) (string, error) {
	if len(m) == 0 {
		return "{}", nil
	}
	for k, v := range m {
		if !json.Valid(v) {
			return "", invalid("%s[%q] is not valid JSON", field, k)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", invalid("%s: %v", field, err)
	}
	if err := CheckJSON(field, b); err != nil {
		return "", err
	}
	return string(b), nil
}

// decodeNamespaces decodes a JSON object column.
func decodeNamespaces(b []byte) (map[string]json.RawMessage, error) {
	if len(b) == 0 || string(b) == "{}" {
		return map[string]json.RawMessage{}, nil
	}
	var m map[string]json.RawMessage
	if err := jsonfast.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m == nil { // the column held null
		m = map[string]json.RawMessage{}
	}
	return m, nil
}

// mergeNamespaces returns cur with patch's keys set, nil or null values
// removing keys.
func mergeNamespaces(cur, patch map[string]json.RawMessage) map[string]json.RawMessage {
	out := maps.Clone(cur)
	if out == nil {
		out = map[string]json.RawMessage{}
	}
	for k, v := range patch {
		if v == nil || isNull(v) {
			delete(out, k)
			continue
		}
		out[k] = v
	}
	return out
}

func isNull(b []byte) bool {
	return bytes.Equal(bytes.TrimSpace(b), []byte("null"))
}

// MergePatch applies an RFC 7396 JSON merge patch to target (nil: absent)
// and returns the result, nil when it is null (absent).
func MergePatch(target, patch json.RawMessage) (json.RawMessage, error) {
	if !json.Valid(patch) {
		return nil, fmt.Errorf("patch is not valid JSON")
	}
	var p any
	if err := unmarshalNumber(patch, &p); err != nil {
		return nil, fmt.Errorf("patch: %w", err)
	}
	var t any
	if len(target) > 0 {
		if err := unmarshalNumber(target, &t); err != nil {
			return nil, fmt.Errorf("target: %w", err)
		}
	}
	r := mergeValue(t, p)
	if r == nil {
		return nil, nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return b, nil
}

func mergeValue(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
			continue
		}
		tm[k] = mergeValue(tm[k], v)
	}
	return tm
}

// unmarshalNumber decodes one JSON value keeping numbers exact.
func unmarshalNumber(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after JSON value")
	}
	return nil
}
