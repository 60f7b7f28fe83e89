package providertest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
)

// Parse is what a recorded reply must stream: the "Expected parse" of a
// recording's .meta.md, or a test's own table. Empty fields are not checked,
// except Text and Calls, which must match exactly when Error is nil.
type Parse struct {
	Text      string `json:"text"`
	Reasoning []struct {
		ID   string `json:"id"`
		Text string `json:"text"`
		// SignaturePrefix is the start of the signature (encrypted content).
		SignaturePrefix string `json:"signature_prefix"`
		Redacted        bool   `json:"redacted"`
	} `json:"reasoning"`
	Calls []struct {
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"calls"`
	FinishReason  string `json:"finish_reason"`
	RefusalPrefix string `json:"refusal_prefix"`
	Usage         *struct {
		Input         int64 `json:"input_tokens"`
		Output        int64 `json:"output_tokens"`
		Cached        int64 `json:"cached_tokens"`
		CacheCreation int64 `json:"cache_creation_tokens"`
		Reasoning     int64 `json:"reasoning_tokens"`
	} `json:"usage"`
	Model     string `json:"model"`
	RequestID string `json:"request_id"`
	// Error, when set, is how the stream must fail instead.
	Error *ParseError `json:"error"`
}

// ParseError is the *model.Error a reply must end with.
type ParseError struct {
	Code      string `json:"code"`
	Transient bool   `json:"transient"`
	// Message holds substrings of the error's Message.
	Message []string `json:"message"`
	// NotMessage holds strings the Message must not contain (secrets).
	NotMessage []string `json:"not_message"`
}

// WantParse is the Parse written as JSON in s, for a test's table.
func WantParse(t testing.TB, s string) Parse {
	t.Helper()
	var p Parse
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// WantMeta is the "Expected parse" of the recording testdata/name.meta.md.
func WantMeta(t testing.TB, name string) Parse {
	t.Helper()
	var p Parse
	MetaParse(t, name+".meta.md", &p)
	return p
}

// CheckBody serves reply from a [Server] to the model build makes for the
// server's URL, streams one request through it, and checks the parse or the
// error against want (see [CheckParse]) and that exactly one request was
// made: a body that is not what it claims is not retried.
func CheckBody(t *testing.T, reply Reply, want Parse, build func(url string) model.Model) {
	t.Helper()
	srv := NewServer(t, reply)
	chunks, err := Stream(t, build(srv.URL), &model.Request{Messages: []message.Message{message.User("hi")}})
	CheckParse(t, chunks, err, want)
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// CheckParse checks the chunks and error of a stream against want.
func CheckParse(t *testing.T, chunks []model.Chunk, err error, want Parse) {
	t.Helper()
	if want.Error != nil {
		checkParseError(t, chunks, err, want)
		return
	}
	if err != nil {
		t.Fatalf("error %v; chunks %s", err, Show(chunks))
	}
	d := chunks[len(chunks)-1]
	msg := d.Message
	if got := msg.Text(); got != want.Text || ChunkText(chunks, model.ChunkText) != want.Text {
		t.Errorf("text %q (chunks %q), want %q", got, ChunkText(chunks, model.ChunkText), want.Text)
	}
	checkReasoning(t, chunks, msg, want)
	checkCalls(t, chunks, msg, want)
	if d.FinishReason != want.FinishReason {
		t.Errorf("finish %q, want %q", d.FinishReason, want.FinishReason)
	}
	if msg.FinishReason != "" && msg.FinishReason != d.FinishReason {
		t.Errorf("message finish %q, chunk %q", msg.FinishReason, d.FinishReason)
	}
	if !strings.HasPrefix(d.Refusal, want.RefusalPrefix) || (want.RefusalPrefix == "" && d.Refusal != "" && d.FinishReason != model.FinishRefusal) {
		t.Errorf("refusal %q, want prefix %q", d.Refusal, want.RefusalPrefix)
	}
	if u := want.Usage; u != nil {
		wu := message.Usage{InputTokens: u.Input, OutputTokens: u.Output, CachedTokens: u.Cached, CacheCreationTokens: u.CacheCreation, ReasoningTokens: u.Reasoning}
		if d.Usage != wu || msg.Usage == nil || *msg.Usage != wu {
			t.Errorf("usage %+v, want %+v", d.Usage, wu)
		}
	}
	if want.Model != "" && d.Model != want.Model {
		t.Errorf("model %q, want %q", d.Model, want.Model)
	}
	if want.RequestID != "" && d.RequestID != want.RequestID {
		t.Errorf("request id %q, want %q", d.RequestID, want.RequestID)
	}
}

// checkParseError checks that a stream failed as want.Error says: a
// *model.Error of its code and transience, whose message holds what it
// must and not what it must not, with the request's id.
func checkParseError(t *testing.T, chunks []model.Chunk, err error, want Parse) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; chunks %s", Show(chunks))
	}
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %T %v is not a *model.Error", err, err)
	}
	if me.Code != want.Error.Code || me.Transient != want.Error.Transient {
		t.Errorf("error code %q transient %v, want %q %v (%v)", me.Code, me.Transient, want.Error.Code, want.Error.Transient, err)
	}
	for _, s := range want.Error.Message {
		if !strings.Contains(me.Message, s) {
			t.Errorf("error message %q lacks %q", me.Message, s)
		}
	}
	for _, s := range want.Error.NotMessage {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error %q holds %q", err, s)
		}
	}
	if want.RequestID != "" && me.RequestID != want.RequestID {
		t.Errorf("error request id %q, want %q", me.RequestID, want.RequestID)
	}
}

// checkReasoning checks the final message's reasoning parts against
// want.Reasoning, and that the reasoning chunks streamed their text.
func checkReasoning(t *testing.T, chunks []model.Chunk, msg *message.Message, want Parse) {
	t.Helper()
	var reasoning []message.Part
	for _, p := range msg.Parts {
		if p.Type == message.PartReasoning {
			reasoning = append(reasoning, p)
		}
	}
	if len(reasoning) != len(want.Reasoning) {
		t.Errorf("reasoning parts %s, want %d", Show(reasoning), len(want.Reasoning))
		return
	}
	streamed := ""
	for i, w := range want.Reasoning {
		p := reasoning[i]
		if p.Text != w.Text || (w.ID != "" && p.ID != w.ID) || !strings.HasPrefix(p.Signature, w.SignaturePrefix) || p.Provider == "" {
			t.Errorf("reasoning part %d = %s, want %+v", i, Show(p), w)
		}
		streamed += w.Text
	}
	if got := ChunkText(chunks, model.ChunkReasoning); got != streamed {
		t.Errorf("reasoning chunks %q, want %q", got, streamed)
	}
}

// checkCalls checks the final message's tool calls against want.Calls, and
// that each was streamed as a chunk.
func checkCalls(t *testing.T, chunks []model.Chunk, msg *message.Message, want Parse) {
	t.Helper()
	calls := msg.ToolCalls()
	if len(calls) != len(want.Calls) {
		t.Fatalf("calls %s, want %d", Show(calls), len(want.Calls))
	}
	for i, w := range want.Calls {
		c := calls[i]
		if c.ID != w.ID || c.Name != w.Name || !JSONEqual(t, c.Arguments, w.Arguments) {
			t.Errorf("call %d = %s, want %s", i, Show(c), Show(w))
		}
	}
	if cc := ChunkCalls(chunks); len(cc) != len(calls) {
		t.Errorf("%d call chunks, %d calls", len(cc), len(calls))
	}
}
