package agent_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/schemas"
	"github.com/batonhq/baton/transfer"
)

// fuzzSchemas are the parameter schemas FuzzParseArguments checks against;
// nil means a tool that declares none.
var fuzzSchemas = []json.RawMessage{
	nil,
	json.RawMessage(`{"type":"object"}`),
	json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string","pattern":"^[0-9]+$"},"amount":{"type":"number","exclusiveMinimum":0}},"required":["order_id","amount"],"additionalProperties":false}`),
	json.RawMessage(`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","maxLength":8},"maxItems":3,"uniqueItems":true},"nested":{"type":"object","properties":{"n":{"type":"integer","minimum":1,"multipleOf":3}},"required":["n"]},"kind":{"enum":["a","b",null,1.5]},"when":{"type":"string","format":"date-time"}}}`),
	json.RawMessage(`{"type":"object","oneOf":[{"required":["a"]},{"required":["b"]}],"patternProperties":{"^x-":{"type":"boolean"}}}`),
	transfer.DefaultContextSchema,
	agent.AgentToolParameters,
}

// FuzzParseArguments feeds arbitrary bytes as a tool call's arguments: the
// result is an *ArgumentError, or the arguments as one JSON object that
// matches the tool's schema. It never panics.
func FuzzParseArguments(f *testing.F) {
	compiled := make([]*schemas.Schema, len(fuzzSchemas))
	for i, raw := range fuzzSchemas {
		if raw == nil {
			continue
		}
		s, err := schemas.Compile(raw)
		if err != nil {
			f.Fatalf("schema %d: %v", i, err)
		}
		compiled[i] = s
	}
	for _, seed := range []string{
		``, `   `, `{}`, ` {} `, "\n{\"a\":1}\n", `null`, `[]`, `[{}]`, `"{}"`, `1`, `true`, `{`, `}`,
		`{"a":1}{"b":2}`, `{"a":1} x`, `{"a":1,}`, `{'a':1}`, `{"a":NaN}`, `{"a":1e400}`,
		`{"order_id":"1234","amount":49.9}`, `{"order_id":"12a","amount":1}`, `{"order_id":"1","amount":0}`,
		`{"order_id":"1","amount":1,"extra":true}`, `{"order_id":"1","amount":1,"amount":"x"}`,
		`{"tags":["a","a"]}`, `{"nested":{"n":3}}`, `{"nested":{"n":3.0}}`, `{"nested":{"n":4}}`, `{"kind":null}`,
		`{"when":"2025-01-02T03:04:05Z"}`, `{"a":1,"b":2}`, `{"x-on":"yes"}`, `{"input":"hi"}`, `{"reason":7}`,
		"{\"a\":\"\xff\"}", "\xef\xbb\xbf{}", `{"a":"\ud800"}`, `{"a":"\u0000"}`,
		`{"a":` + strings.Repeat(`[`, 2000) + strings.Repeat(`]`, 2000) + `}`,
	} {
		for i := range compiled {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		s := compiled[int(which)%len(compiled)]
		out, err := agent.ParseArguments("tool", raw, s)
		if err != nil {
			var ae *agent.ArgumentError
			if !errors.As(err, &ae) {
				t.Fatalf("error %T (%v), want *agent.ArgumentError", err, err)
			}
			if ae.Tool != "tool" || ae.Detail == "" || out != nil {
				t.Fatalf("error %+v with arguments %q", ae, out)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("arguments %q are not valid JSON", out)
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber() // 1e400 is valid JSON, if not a float64
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("arguments %q do not decode: %v", out, err)
		}
		if _, ok := v.(map[string]any); !ok {
			t.Fatalf("arguments %q are a %T, not an object", out, v)
		}
		if s != nil {
			if err := s.Validate(out); err != nil {
				t.Fatalf("arguments %q do not match the schema: %v", out, err)
			}
		}
		want := bytes.TrimSpace(raw)
		if len(want) == 0 {
			want = []byte(`{}`)
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("arguments %q, want the input %q as given", out, want)
		}
	})
}
