// Package schemas compiles and applies JSON Schemas with
// santhosh-tekuri/jsonschema, and derives schemas from Go types.
package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"

	ijs "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// printer renders validation messages; it is safe for concurrent use.
var printer = message.NewPrinter(language.English)

// Schema is a compiled JSON Schema. It is safe for concurrent use.
type Schema struct {
	raw json.RawMessage
	s   *jsonschema.Schema
	// fast checks values on the fast path (fast.go); nil when the schema
	// is not of its subset.
	fast *fastNode
}

// Raw returns the schema document.
func (s *Schema) Raw() json.RawMessage { return s.raw }

var seq atomic.Int64

// Compile compiles a schema document (draft 2020-12 unless it says otherwise).
func Compile(raw json.RawMessage) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, errors.New("schema must be a JSON object")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := fmt.Sprintf("mem://schema/%d.json", seq.Add(1))
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("invalid schema: %w", err)
	}
	return &Schema{raw: raw, s: s, fast: compileFast(doc, 0)}, nil
}

// ValidationError says why a value does not match a schema, in one line a
// model or a person can act on.
type ValidationError struct{ Detail string }

func (e *ValidationError) Error() string { return e.Detail }

// ErrNotJSON is wrapped when the value is not valid JSON.
var ErrNotJSON = errors.New("not valid JSON")

// Validate checks a JSON value against s. A value of a simple schema (see
// fast.go) that matches is accepted without being decoded; the verdict and
// the message are the validator's in every other case.
func (s *Schema) Validate(value json.RawMessage) error {
	if s.fast != nil && s.fast.accepts(value) {
		return nil
	}
	v, err := Decode(value)
	if err != nil {
		return err
	}
	return s.ValidateValue(v)
}

// Decode decodes one JSON value for [Schema.ValidateValue] (numbers kept
// exact). Trailing data is an error wrapping [ErrNotJSON].
func Decode(value json.RawMessage) (any, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	return v, nil
}

// ValidateValue checks a decoded value (as produced by jsonschema.UnmarshalJSON
// or encoding/json with UseNumber) against s.
func (s *Schema) ValidateValue(v any) error {
	if err := s.s.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return &ValidationError{Detail: flatten(ve)}
		}
		return &ValidationError{Detail: err.Error()}
	}
	return nil
}

// flatten renders the leaf causes as "at /path: message; …".
func flatten(ve *jsonschema.ValidationError) string {
	var parts []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			out := e.ErrorKind.LocalizedString(printer)
			parts = append(parts, "at "+loc+": "+out)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(parts) == 0 {
		return ve.Error()
	}
	return strings.Join(parts, "; ")
}

// For returns the JSON Schema of Go type T (a struct, usually), with
// properties named by json tags, required unless omitempty, and descriptions
// from `jsonschema:"description=…"` tags.
func For[T any]() (json.RawMessage, error) {
	t := reflect.TypeFor[T]()
	r := &ijs.Reflector{DoNotReference: true, ExpandedStruct: true, Anonymous: true}
	s := r.ReflectFromType(t)
	s.Version = ""
	s.ID = ""
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("schema for %s: %w", t, err)
	}
	return b, nil
}

// ObjectSchema is the schema of any JSON object, used when a tool declares none.
var ObjectSchema = json.RawMessage(`{"type":"object"}`)
