package providertest

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
)

// Stream drains the stream m answers req with. It fails t when an item
// follows the end of the stream (ChunkDone or an error), or when the stream
// ends with neither.
func Stream(t testing.TB, m model.Model, req *model.Request) ([]model.Chunk, error) {
	t.Helper()
	var chunks []model.Chunk
	var err error
	for c, e := range m.Stream(t.Context(), req) {
		if err != nil {
			t.Fatalf("item after the error %v", err)
		}
		if len(chunks) > 0 && chunks[len(chunks)-1].Type == model.ChunkDone {
			t.Fatal("item after ChunkDone")
		}
		if e != nil {
			err = e
			continue
		}
		chunks = append(chunks, c)
	}
	if err == nil && (len(chunks) == 0 || chunks[len(chunks)-1].Type != model.ChunkDone) {
		t.Fatal("stream ended without ChunkDone or error")
	}
	return chunks, err
}

// ChunkText joins the text of the chunks of type typ.
func ChunkText(chunks []model.Chunk, typ model.ChunkType) string {
	var b strings.Builder
	for _, c := range chunks {
		if c.Type == typ {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// ChunkCalls returns the tool calls of the ChunkToolCall chunks.
func ChunkCalls(chunks []model.Chunk) []message.ToolCall {
	var out []message.ToolCall
	for _, c := range chunks {
		if c.Type == model.ChunkToolCall {
			out = append(out, *c.ToolCall)
		}
	}
	return out
}

// JSONEqual reports whether a and b hold the same JSON value; it fails t
// when either is not JSON.
func JSONEqual(t testing.TB, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// Show is v as JSON, for failure messages.
func Show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// ToAny is v after a JSON round trip (maps, slices, strings, float64s), so
// that values built from different Go types compare with reflect.DeepEqual.
func ToAny(v any) any {
	var out any
	b, _ := json.Marshal(v)
	_ = json.Unmarshal(b, &out)
	return out
}

// WantError is how a stream must fail, for [CheckError].
type WantError struct {
	// Provider is the error's Provider and the prefix of its text.
	Provider  string
	Transient bool
	Status    int
	Code      string
	Retry     time.Duration
	RequestID string
	// Message is a substring of the error's Message.
	Message string
	// Text is what the stream yielded before failing.
	Text string
	// SDKError: the SDK's error (the type parameter of CheckError) is
	// reachable with errors.As.
	SDKError bool
}

// CheckError streams a one-message request from m, which must fail with a
// *model.Error as want says, in srv's only request; the error must not hold
// key, the API key. SDKErr is the SDK's error type.
func CheckError[SDKErr error](t *testing.T, srv *Server, m model.Model, key string, want WantError) {
	t.Helper()
	chunks, err := Stream(t, m, &model.Request{Messages: []message.Message{message.User("hi")}})
	if err == nil {
		t.Fatalf("no error; chunks %+v", chunks)
	}
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %T %v is not a *model.Error", err, err)
	}
	got := WantError{Provider: me.Provider, Transient: me.Transient, Status: me.StatusCode, Code: me.Code, Retry: me.RetryAfter,
		RequestID: me.RequestID, Message: want.Message, Text: ChunkText(chunks, model.ChunkText), SDKError: errors.As(err, new(SDKErr))}
	if got != want {
		t.Errorf("got %+v,\nwant %+v (%v)", got, want, err)
	}
	if !strings.HasPrefix(err.Error(), want.Provider+": ") || !strings.Contains(me.Message, want.Message) {
		t.Errorf("error %q (message %q, want %q)", err, me.Message, want.Message)
	}
	if key != "" && (strings.Contains(err.Error(), key) || strings.Contains(me.Message, key)) {
		t.Errorf("error text holds the API key: %v", err)
	}
	if me.Temporary() != me.Transient || me.RetryDelay() != me.RetryAfter {
		t.Error("Temporary/RetryDelay disagree with the fields")
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests: the SDK must not retry", n)
	}
}

// NewModel returns the model newModel builds from cfg, failing t on an
// error.
func NewModel[C, M any](t testing.TB, newModel func(C) (M, error), cfg C) M {
	t.Helper()
	m, err := newModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// CheckUnsupported checks that m refuses, with an error wrapping
// unsupported and before sending anything to srv, each of extra and the
// requests no adapter can send: nil, images outside a user message or
// without a source, an unknown role, a forced tool choice naming no tool,
// tool parameters and output schemas that are not JSON objects.
func CheckUnsupported(t *testing.T, srv *Server, m model.Model, unsupported error, extra map[string]*model.Request) {
	t.Helper()
	image := func(role message.Role, p message.Part) *model.Request {
		p.Type = message.PartImage
		return &model.Request{Messages: []message.Message{{Role: role, Parts: []message.Part{p}}}}
	}
	user := []message.Message{message.User("x")}
	reqs := map[string]*model.Request{
		"Nil":                   nil,
		"ImageInAssistant":      image(message.RoleAssistant, message.Part{URL: "https://x/y.png"}),
		"ImageInSystem":         image(message.RoleSystem, message.Part{URL: "https://x/y.png"}),
		"ImageWithoutSource":    image(message.RoleUser, message.Part{}),
		"UnknownRole":           {Messages: []message.Message{{Role: "narrator", Parts: []message.Part{{Type: message.PartText, Text: "x"}}}}},
		"ToolSchemaNotObject":   {Messages: user, Tools: []model.Tool{{Name: "t", Parameters: []byte(`[1]`)}}},
		"UnknownToolChoice":     {Messages: user, Tools: []model.Tool{{Name: "t"}}, Settings: model.Settings{ToolChoice: "other"}},
		"OutputSchemaCutObject": {Messages: user, Output: &model.OutputSchema{Schema: []byte(`{`)}},
		"OutputSchemaCutArray":  {Messages: user, Output: &model.OutputSchema{Schema: []byte(`[`)}},
	}
	maps.Copy(reqs, extra)
	for name, req := range reqs {
		t.Run(name, func(t *testing.T) {
			if _, err := model.Collect(m.Stream(t.Context(), req)); !errors.Is(err, unsupported) {
				t.Fatalf("error %v, want %v", err, unsupported)
			}
		})
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent for unsupported requests", n)
	}
}

// Recording returns the request of the recording name (testdata/
// name.request.json) and its expected parse (the JSON block of testdata/
// name.meta.md).
func Recording[P any](t testing.TB, name string) (req map[string]any, want P) {
	t.Helper()
	FixtureJSON(t, name+".request.json", &req)
	MetaParse(t, name+".meta.md", &want)
	return req, want
}

// RecordedTools turns the tools of a recorded request into model tools. A
// tool is flat, with its schema in input_schema (Anthropic) or parameters
// (Responses), or nested under "function" (Chat Completions).
func RecordedTools(t testing.TB, rec map[string]any) []model.Tool {
	t.Helper()
	var out []model.Tool
	for _, raw := range rec["tools"].([]any) {
		tl := raw.(map[string]any)
		if fn, ok := tl["function"].(map[string]any); ok {
			tl = fn
		}
		schema, ok := tl["input_schema"]
		if !ok {
			schema = tl["parameters"]
		}
		params, err := json.Marshal(schema)
		if err != nil {
			t.Fatal(err)
		}
		desc, _ := tl["description"].(string)
		out = append(out, model.Tool{Name: tl["name"].(string), Description: desc, Parameters: params})
	}
	return out
}
