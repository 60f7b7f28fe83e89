package outputschema

import (
	"errors"
	"sync"
	"testing"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	schema := []byte(`{"type":"object","properties":{"title":{"type":"string"},"body":{"type":"array","items":{"$ref":"#/$defs/line"},"minItems":1}},"required":["title","body"],"additionalProperties":false,"$defs":{"line":{"type":"string","maxLength":10}}}`)
	for _, tc := range []struct {
		name   string
		schema []byte
		doc    string
		err    error
	}{
		{"Valid", schema, `{"title":"t","body":["a","b"]}`, nil},
		{"ValidWithSpace", schema, " \n{\"title\":\"t\",\"body\":[\"a\"]}\n", nil},
		{"MissingField", schema, `{"title":"t"}`, ErrMismatch},
		{"ExtraField", schema, `{"title":"t","body":["a"],"x":1}`, ErrMismatch},
		{"RefConstraint", schema, `{"title":"t","body":["far too long a line"]}`, ErrMismatch},
		{"NotJSON", schema, `Sure! {"title":"t"}`, ErrMismatch},
		{"Empty", schema, ``, ErrMismatch},
		{"Trailing", schema, `{"title":"t","body":["a"]} extra`, ErrMismatch},
		{"BadSchema", []byte(`{"type":"object",`), `{}`, ErrSchema},
		{"BadSchemaKeyword", []byte(`{"type":12}`), `{}`, ErrSchema},
		{"ExternalRefRefused", []byte(`{"$ref":"file:///etc/passwd"}`), `{}`, ErrSchema},
		{"RemoteRefRefused", []byte(`{"$ref":"https://example.com/s.json"}`), `{}`, ErrSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := Validate(tc.schema, []byte(tc.doc)); !errors.Is(err, tc.err) {
				t.Fatalf("Validate = %v, want %v", err, tc.err)
			}
		})
	}
}

func TestValidateConcurrent(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			schema := []byte(`{"type":"object","properties":{"n":{"const":` + string(rune('0'+i%4)) + `}}}`)
			if err := Validate(schema, []byte(`{"n":`+string(rune('0'+i%4))+`}`)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

func TestObject(t *testing.T) {
	t.Parallel()
	if m, err := Object(nil); err != nil || m["type"] != "object" {
		t.Errorf("Object(nil) = %v, %v", m, err)
	}
	for _, bad := range []string{`[]`, `null`, `"x"`, `{`} {
		if _, err := Object([]byte(bad)); !errors.Is(err, ErrSchema) {
			t.Errorf("Object(%s) = %v, want ErrSchema", bad, err)
		}
	}
}
