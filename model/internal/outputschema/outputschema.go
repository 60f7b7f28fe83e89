// Package outputschema validates structured model output against the JSON
// Schema of a [model.OutputSchema] and converts schemas to the map form the
// provider SDKs take.
package outputschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrMismatch is wrapped by [Validate] when the output is not valid JSON or
// does not match the schema.
var ErrMismatch = errors.New("output does not match the schema")

// ErrSchema is wrapped by [Validate] when the schema itself cannot be compiled.
var ErrSchema = errors.New("invalid output schema")

// maxCached bounds the compiled-schema cache; agents have few schemas.
const maxCached = 256

var cache struct {
	sync.Mutex
	m map[string]compiled
}

type compiled struct {
	s   *jsonschema.Schema
	err error
}

// noLoader refuses to load referenced documents: schemas must be self-contained
// (local "#/$defs/..." references work), and nothing is read from disk or
// network on a schema's say.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external reference %q not allowed", url)
}

func compile(schema []byte) (*jsonschema.Schema, error) {
	key := string(schema)
	cache.Lock()
	c, ok := cache.m[key]
	cache.Unlock()
	if ok {
		return c.s, c.err
	}
	c.s, c.err = doCompile(schema)
	cache.Lock()
	if cache.m == nil || len(cache.m) >= maxCached {
		cache.m = make(map[string]compiled)
	}
	cache.m[key] = c
	cache.Unlock()
	return c.s, c.err
}

func doCompile(schema []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	const loc = "mem:///output.schema.json"
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	s, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	return s, nil
}

// Validate checks that doc is one JSON value that matches schema. Compiled
// schemas are cached by content. Safe for concurrent use.
func Validate(schema, doc []byte) error {
	s, err := compile(schema)
	if err != nil {
		return err
	}
	d := bytes.TrimSpace(doc)
	if len(d) == 0 {
		return fmt.Errorf("%w: empty output", ErrMismatch)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(d))
	if err != nil {
		return fmt.Errorf("%w: not JSON: %v", ErrMismatch, err)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("%w: %s", ErrMismatch, oneLine(err.Error()))
	}
	return nil
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 1000 {
		s = s[:1000] + "…"
	}
	return s
}

// Object decodes a JSON Schema object into a map, as the SDKs' schema fields
// take it. Empty input yields an object schema without properties.
func Object(raw json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	if m == nil {
		return nil, fmt.Errorf("%w: not a JSON object", ErrSchema)
	}
	return m, nil
}
