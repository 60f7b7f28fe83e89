// Package modeltest is the conformance suite every [model.Model] passes, in
// the spirit of testing/slogtest: an adapter's test provides a [Factory] that
// builds a Model answering a [Scenario] (typically by pointing the adapter at
// an httptest server that plays a stream in the provider's wire format), and
// [Run] checks the contract of [model.Model]:
//
//   - a stream ends with exactly one ChunkDone (last) or exactly one error,
//     and nothing follows either;
//   - text chunks add up to the final message's text, tool-call chunks equal
//     the final message's tool-call parts (ids, names, argument JSON);
//   - the final message is an assistant message that satisfies
//     [message.Validate] when appended to the request history (with a result
//     for each of its calls), and its usage matches the chunk's;
//   - stopping the iteration early returns, closes the connection and leaves
//     no goroutine of the model's package behind;
//   - a context cancelled before or during the stream stops it promptly with
//     an error that wraps context.Canceled;
//   - one Model serves concurrent streams, and requests are not modified.
package modeltest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
)

// Kind names what a Model must do in a [Scenario].
type Kind int

// Kinds.
const (
	// KindText: answer Scenario.Text, finish reason "stop".
	KindText Kind = iota + 1
	// KindToolCalls: call Scenario.Calls (in parallel, in order), finish
	// reason "tool_calls".
	KindToolCalls
	// KindStall: stream Scenario.Text (at least one chunk), then send nothing
	// more until the request is cancelled, then call Scenario.OnDisconnect.
	KindStall
)

func (k Kind) String() string {
	switch k {
	case KindText:
		return "text"
	case KindToolCalls:
		return "tool_calls"
	case KindStall:
		return "stall"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Scenario is what the Model built by a [Factory] must answer to every
// request of one test.
type Scenario struct {
	Kind  Kind
	Text  string
	Calls []message.ToolCall
	// OnDisconnect is set for KindStall: the server playing the scenario calls
	// it once the client has gone away (its request context ended).
	OnDisconnect func()
}

// Factory returns a Model that plays sc. It returns nil to skip a scenario
// the Model cannot play (a Model without a connection cannot stall).
type Factory func(t *testing.T, sc Scenario) model.Model

// wait bounds every check that something happens "promptly".
const wait = 5 * time.Second

// Request returns the request the suite sends: a system prompt, a history
// with text, a tool call and its result (and reasoning from an unknown
// provider, which adapters must leave out), and one tool.
func Request() *model.Request {
	return &model.Request{
		Agent:  "conformance",
		System: "You are a careful calculator.",
		Messages: []message.Message{
			message.User("What is 6 times 7?"),
			{Role: message.RoleAssistant, Agent: "conformance", Parts: []message.Part{
				{Type: message.PartReasoning, Text: "opaque", Provider: "another-provider", Signature: "sig"},
				{Type: message.PartText, Text: "Let me check."},
				{Type: message.PartToolCall, CallID: "call_hist_1", Name: "multiply", Arguments: json.RawMessage(`{"a":6,"b":7}`)},
			}},
			message.ToolResult("conformance", "call_hist_1", "multiply", "42", false),
			message.Assistant("conformance", "6 times 7 is 42."),
			message.User("And 1231 times 2331?"),
		},
		Tools: []model.Tool{{
			Name:        "multiply",
			Description: "Multiply two numbers.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
		}},
	}
}

// DefaultText is the answer of the text scenario.
const DefaultText = "1231 times 2331 is 2869461. "

// DefaultCalls are the calls of the tool-call scenario.
func DefaultCalls() []message.ToolCall {
	return []message.ToolCall{
		{ID: "call_conf_1", Name: "multiply", Arguments: json.RawMessage(`{"a":1231,"b":2331}`)},
		{ID: "call_conf_2", Name: "multiply", Arguments: json.RawMessage(`{"a":2,"b":3}`)},
	}
}

// Run runs the suite against the Models f builds. Its subtests do not run in
// parallel with each other, so that the goroutine checks see only their own.
func Run(t *testing.T, f Factory) {
	t.Helper()
	t.Run("Text", func(t *testing.T) { testText(t, f) })
	t.Run("ToolCalls", func(t *testing.T) { testToolCalls(t, f) })
	t.Run("StopEarly", func(t *testing.T) { testStopEarly(t, f) })
	t.Run("StopEarlyStalled", func(t *testing.T) { testStopEarlyStalled(t, f) })
	t.Run("CanceledBefore", func(t *testing.T) { testCanceledBefore(t, f) })
	t.Run("CanceledDuring", func(t *testing.T) { testCanceledDuring(t, f) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, f) })
	t.Run("RequestUnchanged", func(t *testing.T) { testRequestUnchanged(t, f) })
}

// collected is a drained stream.
type collected struct {
	chunks []model.Chunk
	err    error
	// afterEnd counts items yielded after the ChunkDone or the error.
	afterEnd int
}

// drain reads a whole stream, counting anything after its end.
func drain(seq func(func(model.Chunk, error) bool)) collected {
	var c collected
	ended := false
	for ch, err := range seq {
		if ended {
			c.afterEnd++
			continue
		}
		if err != nil {
			c.err = err
			ended = true
			continue
		}
		c.chunks = append(c.chunks, ch)
		if ch.Type == model.ChunkDone {
			ended = true
		}
	}
	return c
}

// checkFinal checks the common shape of a successful stream and returns its
// final chunk.
func checkFinal(t *testing.T, req *model.Request, c collected) model.Chunk {
	t.Helper()
	if c.err != nil {
		t.Fatalf("stream failed: %v", c.err)
	}
	if c.afterEnd > 0 {
		t.Errorf("%d items yielded after the stream's end", c.afterEnd)
	}
	checkChunkTypes(t, c.chunks)
	done := c.chunks[len(c.chunks)-1]
	msg := done.Message
	if msg == nil {
		t.Fatal("ChunkDone without a Message")
	}
	if msg.Role != message.RoleAssistant {
		t.Errorf("final message role %q, want assistant", msg.Role)
	}
	if done.FinishReason == "" {
		t.Error("ChunkDone without a FinishReason")
	}
	if msg.Usage != nil && *msg.Usage != done.Usage {
		t.Errorf("message usage %+v differs from chunk usage %+v", *msg.Usage, done.Usage)
	}
	checkChunksAddUp(t, c.chunks, msg)
	for _, p := range msg.Parts {
		if p.Type == message.PartToolResult {
			t.Errorf("final message has a tool result part")
		}
	}
	hist := append(append([]message.Message(nil), req.Messages...), *msg)
	for _, call := range msg.ToolCalls() {
		hist = append(hist, message.ToolResult("", call.ID, call.Name, "ok", false))
	}
	if err := message.Validate(hist); err != nil {
		t.Errorf("history with the final message is invalid: %v", err)
	}
	return done
}

// checkChunkTypes checks that every chunk has a known type, a tool-call
// chunk its call, and that exactly one ChunkDone comes, last.
func checkChunkTypes(t *testing.T, chunks []model.Chunk) {
	t.Helper()
	dones := 0
	for _, ch := range chunks {
		if ch.Type == model.ChunkDone {
			dones++
		}
		switch ch.Type {
		case model.ChunkText, model.ChunkReasoning, model.ChunkToolCall, model.ChunkDone:
		default:
			t.Errorf("chunk of unknown type %d", ch.Type)
		}
		if ch.Type == model.ChunkToolCall && ch.ToolCall == nil {
			t.Errorf("ChunkToolCall without a ToolCall")
		}
	}
	if dones != 1 || chunks[len(chunks)-1].Type != model.ChunkDone {
		t.Fatalf("stream has %d ChunkDone, want exactly one, last", dones)
	}
}

// checkChunksAddUp checks that the text and tool-call chunks add up to the
// final message msg's text and calls.
func checkChunksAddUp(t *testing.T, chunks []model.Chunk, msg *message.Message) {
	t.Helper()
	var text, reasoning strings.Builder
	var calls []message.ToolCall
	for _, ch := range chunks {
		switch ch.Type {
		case model.ChunkText:
			text.WriteString(ch.Text)
		case model.ChunkReasoning:
			reasoning.WriteString(ch.Text)
		case model.ChunkToolCall:
			if ch.ToolCall != nil {
				calls = append(calls, *ch.ToolCall)
			}
		}
	}
	if got := msg.Text(); got != text.String() {
		t.Errorf("final text %q, text chunks add up to %q", got, text.String())
	}
	if err := equalCalls(calls, msg.ToolCalls(), true); err != nil {
		t.Errorf("tool-call chunks differ from the final message's calls: %v", err)
	}
}

// equalCalls compares calls by name and argument JSON, and by id if ids.
func equalCalls(got, want []message.ToolCall, ids bool) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d calls, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if ids && g.ID != w.ID {
			return fmt.Errorf("call %d: id %q, want %q", i, g.ID, w.ID)
		}
		if g.ID == "" {
			return fmt.Errorf("call %d: empty id", i)
		}
		if g.Name != w.Name {
			return fmt.Errorf("call %d: name %q, want %q", i, g.Name, w.Name)
		}
		if !jsonEqual(g.Arguments, w.Arguments) {
			return fmt.Errorf("call %d: arguments %s, want %s", i, g.Arguments, w.Arguments)
		}
	}
	return nil
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

func build(t *testing.T, f Factory, sc Scenario) model.Model {
	t.Helper()
	m := f(t, sc)
	if m == nil {
		t.Skipf("the model cannot play a %s scenario", sc.Kind)
	}
	return m
}

func testText(t *testing.T, f Factory) {
	m := build(t, f, Scenario{Kind: KindText, Text: DefaultText})
	req := Request()
	done := checkFinal(t, req, drain(m.Stream(t.Context(), req)))
	if got := done.Message.Text(); got != DefaultText {
		t.Errorf("text %q, want %q", got, DefaultText)
	}
	if done.FinishReason != "stop" {
		t.Errorf("finish reason %q, want stop", done.FinishReason)
	}
	if done.Message.HasToolCalls() {
		t.Error("text answer has tool calls")
	}
}

func testToolCalls(t *testing.T, f Factory) {
	want := DefaultCalls()
	m := build(t, f, Scenario{Kind: KindToolCalls, Calls: want})
	req := Request()
	done := checkFinal(t, req, drain(m.Stream(t.Context(), req)))
	if err := equalCalls(done.Message.ToolCalls(), want, true); err != nil {
		t.Errorf("calls: %v", err)
	}
	if done.FinishReason != "tool_calls" {
		t.Errorf("finish reason %q, want tool_calls", done.FinishReason)
	}
}

func testStopEarly(t *testing.T, f Factory) {
	m := build(t, f, Scenario{Kind: KindText, Text: DefaultText})
	pkg := pkgPath(m)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		for range m.Stream(t.Context(), Request()) {
			break
		}
	}()
	await(t, returned, "range over the stream did not return after break")
	checkNoLeak(t, pkg)
}

func testStopEarlyStalled(t *testing.T, f Factory) {
	m, gone := buildStalled(t, f)
	pkg := pkgPath(m)
	returned := make(chan error, 1)
	go func() {
		var err error
		for _, e := range m.Stream(t.Context(), Request()) {
			err = e
			break
		}
		returned <- err
	}()
	if err := await(t, returned, "no first chunk, or range did not return after break"); err != nil {
		t.Fatalf("first item of a stalling stream is an error: %v", err)
	}
	await(t, gone, "the connection stayed open after the consumer stopped")
	checkNoLeak(t, pkg)
}

func testCanceledBefore(t *testing.T, f Factory) {
	m := build(t, f, Scenario{Kind: KindText, Text: DefaultText})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := make(chan collected, 1)
	go func() { res <- drain(m.Stream(ctx, Request())) }()
	checkCanceled(t, await(t, res, "stream with a cancelled context did not stop"))
}

func testCanceledDuring(t *testing.T, f Factory) {
	m, gone := buildStalled(t, f)
	pkg := pkgPath(m)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started := make(chan struct{})
	res := make(chan collected, 1)
	go func() {
		first := sync.OnceFunc(func() { close(started) })
		defer first()
		res <- drain(func(yield func(model.Chunk, error) bool) {
			for ch, err := range m.Stream(ctx, Request()) {
				first()
				if !yield(ch, err) {
					return
				}
			}
		})
	}()
	await(t, started, "no first chunk from a stalling stream")
	cancel()
	checkCanceled(t, await(t, res, "stream did not stop after its context was cancelled"))
	await(t, gone, "the connection stayed open after cancellation")
	checkNoLeak(t, pkg)
}

// buildStalled builds the model of a KindStall scenario; gone is closed
// when its connection goes away.
func buildStalled(t *testing.T, f Factory) (m model.Model, gone <-chan struct{}) {
	t.Helper()
	c := make(chan struct{})
	return build(t, f, Scenario{Kind: KindStall, Text: "partial ", OnDisconnect: sync.OnceFunc(func() { close(c) })}), c
}

// await returns what ch delivers first (or its zero value once closed),
// failing t with msg if nothing comes within wait.
func await[T any](t *testing.T, ch <-chan T, msg string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatal(msg)
	}
	panic("unreachable")
}

// checkCanceled checks a stream whose context was cancelled: it ended with
// an error wrapping context.Canceled that is not transient, without
// ChunkDone and with nothing after the error.
func checkCanceled(t *testing.T, c collected) {
	t.Helper()
	if c.err == nil {
		t.Fatalf("stream with a cancelled context ended without an error (%d chunks)", len(c.chunks))
	}
	if !errors.Is(c.err, context.Canceled) {
		t.Errorf("error %v does not wrap context.Canceled", c.err)
	}
	var me *model.Error
	if errors.As(c.err, &me) && me.Transient {
		t.Errorf("cancellation reported as transient: %v", c.err)
	}
	for _, ch := range c.chunks {
		if ch.Type == model.ChunkDone {
			t.Error("ChunkDone in a cancelled stream")
		}
	}
	if c.afterEnd > 0 {
		t.Errorf("%d items after the error", c.afterEnd)
	}
}

func testConcurrent(t *testing.T, f Factory) {
	m := build(t, f, Scenario{Kind: KindText, Text: DefaultText})
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			r, err := model.Collect(m.Stream(t.Context(), Request()))
			switch {
			case err != nil:
				errs <- err
			case r.Message.Text() != DefaultText:
				errs <- fmt.Errorf("text %q, want %q", r.Message.Text(), DefaultText)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func testRequestUnchanged(t *testing.T, f Factory) {
	m := build(t, f, Scenario{Kind: KindToolCalls, Calls: DefaultCalls()})
	req := Request()
	before := snapshot(t, req)
	drain(m.Stream(t.Context(), req))
	if after := snapshot(t, req); !bytes.Equal(before, after) {
		t.Errorf("request modified:\nbefore %s\nafter  %s", before, after)
	}
}

func snapshot(t *testing.T, req *model.Request) []byte {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pkgPath is the import path of the package that defines m's type.
func pkgPath(m model.Model) string {
	ty := reflect.TypeOf(m)
	for ty.Kind() == reflect.Pointer {
		ty = ty.Elem()
	}
	return ty.PkgPath()
}

// checkNoLeak waits until no goroutine runs code of pkg, other than test
// goroutines themselves.
func checkNoLeak(t *testing.T, pkg string) {
	t.Helper()
	if pkg == "" {
		return
	}
	deadline := time.Now().Add(wait)
	for {
		leaked := leakedGoroutines(pkg)
		if len(leaked) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutine(s) of %s still running:\n%s", len(leaked), pkg, strings.Join(leaked, "\n\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func leakedGoroutines(pkg string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, pkg+".") || strings.Contains(g, "testing.tRunner") {
			continue
		}
		out = append(out, g)
	}
	return out
}
