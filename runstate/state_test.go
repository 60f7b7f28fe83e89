package runstate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/transfer"
)

// gen makes random values that survive JSON: valid UTF-8 strings, compact
// JSON raw messages, UTC times, nil rather than empty for omitempty fields.
type gen struct{ r *rand.Rand }

var alphabet = []string{
	"a", "Z", "0", " ", "_", "-", "\n", "\t", "\"", "\\", "/", "<", ">", "&", "\u0000", "\u001f", "\u007f",
	"é", "ß", "東", "京", "☂", "✈️", "😀", "👩‍👩‍👧", "\u2028", "\u2029", "\ufeff", "𝄞", "ﷺ", "\u0301",
}

func (g gen) str() string {
	n := g.r.IntN(12)
	var b strings.Builder
	for range n {
		b.WriteString(alphabet[g.r.IntN(len(alphabet))])
	}
	return b.String()
}

// nonEmpty returns a non-empty string.
func (g gen) nonEmpty() string { return "x" + g.str() }

func (g gen) chance(p float64) bool { return g.r.Float64() < p }

// json returns a compact JSON document.
func (g gen) json(depth int) json.RawMessage {
	b, err := json.Marshal(g.value(depth))
	if err != nil {
		panic(err)
	}
	return b
}

// value returns a JSON-able value whose JSON decoding gives it back.
func (g gen) value(depth int) any {
	k := g.r.IntN(7)
	if depth <= 0 {
		k %= 4
	}
	switch k {
	case 0:
		return g.str()
	case 1:
		return g.r.NormFloat64() * 1e6
	case 2:
		return g.chance(0.5)
	case 3:
		return nil
	case 4:
		m := map[string]any{}
		for range g.r.IntN(4) {
			m[g.str()] = g.value(depth - 1)
		}
		return m
	default:
		s := make([]any, g.r.IntN(4))
		for i := range s {
			s[i] = g.value(depth - 1)
		}
		return s
	}
}

func (g gen) metadata() map[string]any {
	if g.chance(0.6) {
		return nil
	}
	m := map[string]any{}
	for range 1 + g.r.IntN(3) {
		m[g.str()] = g.value(2)
	}
	return m
}

func (g gen) part() message.Part {
	switch g.r.IntN(5) {
	case 0:
		return message.Part{Type: message.PartText, Text: g.str()}
	case 1:
		p := message.Part{Type: message.PartToolCall, CallID: g.nonEmpty(), Name: g.str()}
		if g.chance(0.8) {
			p.Arguments = g.json(2)
		}
		return p
	case 2:
		return message.Part{Type: message.PartToolResult, CallID: g.nonEmpty(), Name: g.str(), Text: g.str(), IsError: g.chance(0.3)}
	case 3:
		return message.Part{Type: message.PartReasoning, Text: g.str(), Provider: g.str(), Signature: g.str(), ID: g.str()}
	default:
		p := message.Part{Type: message.PartImage, MediaType: "image/png", URL: g.str()}
		if g.chance(0.5) {
			p.Data = make([]byte, 1+g.r.IntN(16))
			for i := range p.Data {
				p.Data[i] = byte(g.r.UintN(256))
			}
		}
		return p
	}
}

func (g gen) usage() message.Usage {
	return message.Usage{InputTokens: g.r.Int64N(1 << 40), OutputTokens: g.r.Int64N(1 << 20), CachedTokens: g.r.Int64N(100), ReasoningTokens: g.r.Int64N(100)}
}

func (g gen) message() message.Message {
	roles := []message.Role{message.RoleSystem, message.RoleUser, message.RoleAssistant, message.RoleTool}
	statuses := []message.Status{"", message.StatusQueued, message.StatusStreaming, message.StatusCompleted, message.StatusError}
	m := message.Message{ID: g.str(), Role: roles[g.r.IntN(len(roles))], Agent: g.str(),
		Status: statuses[g.r.IntN(len(statuses))], Metadata: g.metadata()}
	if g.chance(0.9) {
		m.Parts = make([]message.Part, g.r.IntN(4))
		for i := range m.Parts {
			m.Parts[i] = g.part()
		}
	}
	if g.chance(0.4) {
		u := g.usage()
		m.Usage = &u
	}
	return m
}

// messages returns nil or some messages.
func (g gen) messages() []message.Message {
	if g.chance(0.1) {
		return nil
	}
	ms := make([]message.Message, g.r.IntN(6))
	for i := range ms {
		ms[i] = g.message()
	}
	return ms
}

func (g gen) transfer() *transfer.Context {
	if g.chance(0.5) {
		return nil
	}
	types := []transfer.Type{transfer.TypeTransfer, transfer.TypeReturn, transfer.TypeReturned, transfer.TypeSequential, transfer.TypeRule}
	hist := []transfer.HistoryPolicy{transfer.HistoryFull, transfer.HistoryLastUser, transfer.HistoryNone}
	h := &transfer.Context{ID: g.str(), From: g.str(), To: g.str(), Type: types[g.r.IntN(len(types))], Tool: g.str(),
		Reason: g.str(), ExpectedOutput: g.str(), History: hist[g.r.IntN(len(hist))]}
	if g.chance(0.5) {
		h.Data = g.json(3)
	}
	if g.chance(0.5) {
		h.Transforms = []string{g.nonEmpty(), g.str()}
	}
	return h
}

func (g gen) time() time.Time {
	return time.Unix(g.r.Int64N(4e9), g.r.Int64N(1e9)).UTC()
}

func (g gen) state() *runstate.State {
	statuses := []runstate.Status{runstate.StatusRunning, runstate.StatusInterrupted, runstate.StatusSuspended, runstate.StatusCompleted, runstate.StatusFailed}
	kinds := []runstate.CallKind{runstate.CallTool, runstate.CallTransfer, runstate.CallAgentTool}
	s := &runstate.State{
		SchemaVersion: runstate.SchemaVersion,
		RunID:         g.nonEmpty(), ThreadID: g.str(), Network: g.str(), Fingerprint: g.nonEmpty(), Agent: g.nonEmpty(),
		Messages: g.messages(), Transcript: g.messages(), Transfer: g.transfer(),
		Turns: g.r.IntN(1000), Transfers: g.r.IntN(100), Usage: g.usage(), Step: g.r.IntN(1 << 20),
		Status: statuses[g.r.IntN(len(statuses))], FinalOutput: g.str(), StartedAt: g.time(),
	}
	if g.chance(0.8) {
		s.Trail = []string{g.nonEmpty(), g.str()}
	}
	if g.chance(0.6) {
		s.Pending = make([]runstate.PendingCall, 1+g.r.IntN(3))
		for i := range s.Pending {
			p := &s.Pending[i]
			p.Call = message.ToolCall{ID: g.nonEmpty(), Name: g.str(), Arguments: g.json(2)}
			p.Kind = kinds[g.r.IntN(len(kinds))]
			p.Approved = g.chance(0.3)
			if g.chance(0.5) {
				p.Result = &runstate.Result{Output: g.str(), IsError: g.chance(0.3)}
			}
		}
	}
	if g.chance(0.5) {
		s.Stack = make([]runstate.Frame, 1+g.r.IntN(3))
		for i := range s.Stack {
			s.Stack[i] = runstate.Frame{Agent: g.str(), Messages: g.messages(), Transfer: g.transfer(), TransferID: g.str()}
		}
	}
	if s.Status == runstate.StatusInterrupted || g.chance(0.2) {
		s.Interrupt = &runstate.Interrupt{SchemaVersion: 1, ID: g.str(), Source: g.str()}
		if g.chance(0.8) {
			s.Interrupt.ActionRequests = make([]runstate.ActionRequest, 1+g.r.IntN(2))
			for i := range s.Interrupt.ActionRequests {
				s.Interrupt.ActionRequests[i] = runstate.ActionRequest{Name: g.str(), Args: g.json(2), CallID: g.str(), Description: g.str()}
			}
		}
	}
	if s.Status == runstate.StatusFailed || g.chance(0.1) {
		s.Failure = &runstate.Failure{Kind: g.str(), Message: g.str(), Limit: g.str()}
	}
	if g.chance(0.7) {
		s.Elapsed = time.Duration(g.r.Int64N(int64(48 * time.Hour)))
		s.Seq = g.r.IntN(1 << 16)
	}
	if g.chance(0.4) {
		s.Values = map[string]json.RawMessage{g.str(): g.json(2), g.nonEmpty(): g.json(1)}
	}
	return s
}

// TestEncodeDecodeRoundTrip checks on random states that Decode(Encode(s))
// is s and that encoding the result gives the same bytes.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	const n = 500
	for seed := range uint64(n) {
		g := gen{rand.New(rand.NewPCG(seed, 0x62746f6e))}
		s := g.state()
		b, err := runstate.Encode(s)
		if err != nil {
			t.Fatalf("seed %d: Encode: %v", seed, err)
		}
		if !json.Valid(b) {
			t.Fatalf("seed %d: Encode gave invalid JSON", seed)
		}
		got, err := runstate.Decode(b)
		if err != nil {
			t.Fatalf("seed %d: Decode: %v\n%s", seed, err, b)
		}
		if !reflect.DeepEqual(got, s) {
			t.Fatalf("seed %d: round trip differs\n got %#v\nwant %#v", seed, got, s)
		}
		b2, err := runstate.Encode(got)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("seed %d: re-encoding differs (%v)\n%s\n%s", seed, err, b, b2)
		}
	}
}

// TestEncodeSetsSchemaVersion: the caller's SchemaVersion is ignored and
// left alone.
func TestEncodeSetsSchemaVersion(t *testing.T) {
	t.Parallel()
	s := gen{rand.New(rand.NewPCG(1, 2))}.state()
	s.SchemaVersion = 0
	b, err := runstate.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if s.SchemaVersion != 0 {
		t.Fatal("Encode changed its argument")
	}
	got, err := runstate.Decode(b)
	if err != nil || got.SchemaVersion != runstate.SchemaVersion {
		t.Fatalf("Decode: version %v, %v", got, err)
	}
	if _, err := runstate.Encode(nil); err == nil {
		t.Fatal("Encode(nil) succeeded")
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	valid := func(mutate func(m map[string]any)) []byte {
		m := map[string]any{"schema_version": runstate.SchemaVersion, "run_id": "r", "agent": "a", "fingerprint": "f", "status": "running"}
		mutate(m)
		b, _ := json.Marshal(m)
		return b
	}
	if _, err := runstate.Decode(valid(func(map[string]any) {})); err != nil {
		t.Fatalf("minimal state: %v", err)
	}
	for name, tc := range map[string]struct {
		b      []byte
		target error
	}{
		"empty":          {nil, runstate.ErrCorrupt},
		"not json":       {[]byte("\x00garbage"), runstate.ErrCorrupt},
		"array":          {[]byte(`[]`), runstate.ErrCorrupt},
		"no version":     {[]byte(`{"run_id":"r"}`), runstate.ErrCorrupt},
		"future version": {[]byte(`{"schema_version":3}`), runstate.ErrUnknownVersion},
		"version 0":      {[]byte(`{"schema_version":0}`), runstate.ErrUnknownVersion},
		"old name":       {valid(func(m map[string]any) { m["handoffs"] = 1 }), runstate.ErrCorrupt},
		"old kind": {valid(func(m map[string]any) {
			m["pending"] = []any{map[string]any{"call": map[string]any{"id": "c"}, "kind": "handoff"}}
		}), runstate.ErrCorrupt},
		"version 1 with new name": {[]byte(`{"schema_version":1,"run_id":"r","agent":"a","fingerprint":"f","status":"running","transfers":1}`), runstate.ErrCorrupt},
		"version 1 with new kind": {[]byte(`{"schema_version":1,"run_id":"r","agent":"a","fingerprint":"f","status":"running","pending":[{"call":{"id":"c"},"kind":"transfer"}]}`), runstate.ErrCorrupt},
		"version 1 invalid":       {[]byte(`{"schema_version":1,"run_id":"r","agent":"a","fingerprint":"f","status":"paused"}`), runstate.ErrCorrupt},
		"no run":                  {valid(func(m map[string]any) { delete(m, "run_id") }), runstate.ErrCorrupt},
		"no agent":                {valid(func(m map[string]any) { m["agent"] = "" }), runstate.ErrCorrupt},
		"no fingerprint":          {valid(func(m map[string]any) { delete(m, "fingerprint") }), runstate.ErrCorrupt},
		"bad status":              {valid(func(m map[string]any) { m["status"] = "dancing" }), runstate.ErrCorrupt},
		"interrupted":             {valid(func(m map[string]any) { m["status"] = "interrupted" }), runstate.ErrCorrupt},
		"unknown field":           {valid(func(m map[string]any) { m["surprise"] = 1 }), runstate.ErrCorrupt},
		"wrong type":              {valid(func(m map[string]any) { m["turns"] = "many" }), runstate.ErrCorrupt},
		"pending no id":           {valid(func(m map[string]any) { m["pending"] = []any{map[string]any{"call": map[string]any{}, "kind": "tool"}} }), runstate.ErrCorrupt},
		"pending kind": {valid(func(m map[string]any) {
			m["pending"] = []any{map[string]any{"call": map[string]any{"id": "c"}, "kind": "x"}}
		}), runstate.ErrCorrupt},
		"trailing": {append(valid(func(map[string]any) {}), []byte(` {}`)...), runstate.ErrCorrupt},
	} {
		s, err := runstate.Decode(tc.b)
		if s != nil || !errors.Is(err, tc.target) {
			t.Errorf("%s: Decode = %v, %v; want %v", name, s, err, tc.target)
		}
	}
	var ve *runstate.VersionError
	if _, err := runstate.Decode([]byte(`{"schema_version":7}`)); !errors.As(err, &ve) || ve.Version != 7 {
		t.Errorf("VersionError = %v", err)
	}
}

// TestDecodeSchema1 decodes a state written by schema version 1, before
// agent → agent handoffs were called transfers: it comes back as a state of
// the current version whose encoding is the old one with the transfer names.
func TestDecodeSchema1(t *testing.T) {
	t.Parallel()
	old, err := os.ReadFile("testdata/state_v1.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := runstate.Decode(old)
	if err != nil {
		t.Fatal(err)
	}
	if s.SchemaVersion != runstate.SchemaVersion || s.Transfers != 2 || s.Transfer == nil || s.Transfer.ID != "run_v1-h2" ||
		s.Transfer.Type != transfer.TypeReturn || s.Transfer.ExpectedOutput != "the charges" {
		t.Errorf("state = %+v, transfer %+v", s, s.Transfer)
	}
	if len(s.Stack) != 1 || s.Stack[0].Agent != "billing" || s.Stack[0].TransferID != "run_v1-h2" || s.Stack[0].Transfer == nil ||
		s.Stack[0].Transfer.ID != "run_v1-h1" || !bytes.Contains(s.Stack[0].Transfer.Data, []byte(`"order_id": "1234"`)) || len(s.Stack[0].Messages) != 1 {
		t.Errorf("stack = %+v", s.Stack)
	}
	if len(s.Pending) != 2 || s.Pending[0].Kind != runstate.CallTool || s.Pending[0].Result == nil || s.Pending[1].Kind != runstate.CallTransfer {
		t.Errorf("pending = %+v", s.Pending)
	}
	// Everything else is as it was: the encoding is the old one with the
	// new version and names.
	var compact bytes.Buffer
	if err := json.Compact(&compact, old); err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer(`"schema_version":1,`, `"schema_version":2,`, `"handoff":`, `"transfer":`, `"handoffs":`, `"transfers":`,
		`"handoff_id":`, `"transfer_id":`, `"kind":"handoff"`, `"kind":"transfer"`).Replace(compact.String())
	got, err := runstate.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("re-encoded:\n%s\nwant:\n%s", got, want)
	}
	again, err := runstate.Decode(got)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := runstate.Encode(again); !bytes.Equal(b, got) {
		t.Errorf("the migrated state does not round-trip:\n%s\n%s", b, got)
	}
}

func TestCheckFingerprint(t *testing.T) {
	t.Parallel()
	s := &runstate.State{Network: "support", Fingerprint: "v1"}
	if err := s.CheckFingerprint("v1"); err != nil {
		t.Fatal(err)
	}
	err := s.CheckFingerprint("v2")
	var ie *runstate.IncompatibleError
	if !errors.As(err, &ie) || !errors.Is(err, runstate.ErrIncompatible) || ie.Checkpoint != "v1" || ie.Current != "v2" || ie.Network != "support" {
		t.Fatalf("CheckFingerprint = %v", err)
	}
	if msg := fmt.Sprint(err); !strings.Contains(msg, "v1") || !strings.Contains(msg, "v2") {
		t.Fatalf("message %q does not name both versions", msg)
	}
}

// TestValidateMatchesDecode: Validate accepts exactly the states whose
// encoding Decode accepts, so that a store that validates before writing
// never stores a state it cannot read back.
func TestValidateMatchesDecode(t *testing.T) {
	t.Parallel()
	base := func() *runstate.State {
		return &runstate.State{RunID: "r", Agent: "a", Fingerprint: "f", Status: runstate.StatusRunning,
			Pending: []runstate.PendingCall{{Call: message.ToolCall{ID: "c", Arguments: json.RawMessage(`{}`)}, Kind: runstate.CallTool}}}
	}
	for name, tc := range map[string]struct {
		mutate func(s *runstate.State)
		valid  bool
	}{
		"valid":             {func(*runstate.State) {}, true},
		"no run":            {func(s *runstate.State) { s.RunID = "" }, false},
		"no agent":          {func(s *runstate.State) { s.Agent = "" }, false},
		"no fingerprint":    {func(s *runstate.State) { s.Fingerprint = "" }, false},
		"no status":         {func(s *runstate.State) { s.Status = "" }, false},
		"unknown status":    {func(s *runstate.State) { s.Status = "paused" }, false},
		"interrupted":       {func(s *runstate.State) { s.Status = runstate.StatusInterrupted }, false},
		"interrupted ok":    {func(s *runstate.State) { s.Status, s.Interrupt = runstate.StatusInterrupted, &runstate.Interrupt{} }, true},
		"suspended":         {func(s *runstate.State) { s.Status = runstate.StatusSuspended }, true},
		"completed":         {func(s *runstate.State) { s.Status = runstate.StatusCompleted }, true},
		"failed":            {func(s *runstate.State) { s.Status = runstate.StatusFailed }, true},
		"pending no id":     {func(s *runstate.State) { s.Pending[0].Call.ID = "" }, false},
		"pending no kind":   {func(s *runstate.State) { s.Pending[0].Kind = "" }, false},
		"pending transfer":  {func(s *runstate.State) { s.Pending[0].Kind = runstate.CallTransfer }, true},
		"pending agentTool": {func(s *runstate.State) { s.Pending[0].Kind = runstate.CallAgentTool }, true},
		"no pending":        {func(s *runstate.State) { s.Pending = nil }, true},
	} {
		s := base()
		tc.mutate(s)
		b, err := runstate.Encode(s)
		if err != nil {
			t.Fatalf("%s: Encode: %v", name, err)
		}
		_, decErr := runstate.Decode(b)
		verr := s.Validate()
		if (verr == nil) != tc.valid || (decErr == nil) != tc.valid {
			t.Errorf("%s: Validate = %v, Decode = %v; want valid %v", name, verr, decErr, tc.valid)
		}
	}
}
