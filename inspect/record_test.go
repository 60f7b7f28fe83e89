package inspect

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/batonhq/baton/message"
)

// TestEncodeCap: encode keeps a detail under the cap by dropping the
// fewest oldest messages that make it fit, then by cutting texts, and as
// a last resort records only that it was too large.
func TestEncodeCap(t *testing.T) {
	t.Parallel()
	request := func() *Detail {
		var msgs []message.Message
		for i := range 10 {
			msgs = append(msgs, message.User(strings.Repeat(string(rune('a'+i)), 200)))
		}
		return &Detail{Request: &Request{System: "sys", Messages: msgs}}
	}
	whole, _ := json.Marshal(request())
	if b, cut := encode(request(), len(whole)); cut || string(b) != string(whole) {
		t.Fatalf("a detail at the cap: truncated %v", cut)
	}

	// Room for about four messages: the oldest dropped, the fewest that fit.
	const capBytes = 1100
	b, cut := encode(request(), capBytes)
	var d Detail
	if err := json.Unmarshal(b, &d); err != nil || !cut || len(b) > capBytes {
		t.Fatalf("encode = %d bytes, truncated %v, %v", len(b), cut, err)
	}
	if d.DroppedMessages == 0 || d.DroppedMessages+len(d.Request.Messages) != 10 ||
		d.Request.Messages[len(d.Request.Messages)-1].Text() != strings.Repeat("j", 200) {
		t.Fatalf("dropped %d, kept %d", d.DroppedMessages, len(d.Request.Messages))
	}
	fewer := request()
	fewer.Request.Messages = fewer.Request.Messages[d.DroppedMessages-1:]
	fewer.DroppedMessages = d.DroppedMessages - 1
	if more, _ := json.Marshal(fewer); len(more) <= capBytes {
		t.Fatalf("dropping %d messages fits (%d bytes), encode dropped %d", d.DroppedMessages-1, len(more), d.DroppedMessages)
	}

	// The newest message alone over the cap: its text cut.
	one := &Detail{Request: &Request{Messages: []message.Message{message.User(strings.Repeat("é", 2000))}}}
	b, cut = encode(one, 1000)
	if err := json.Unmarshal(b, &d); err != nil || !cut || len(b) > 1000 || !strings.HasSuffix(d.Request.Messages[0].Text(), "…[cut]") {
		t.Fatalf("one long message: %s, truncated %v, %v", b, cut, err)
	}

	// Nothing left to cut fits: the error in place of the detail.
	out := strings.Repeat("x", 100)
	b, cut = encode(&Detail{Output: &out, Type: strings.Repeat("t", 500)}, 200)
	if !cut || !strings.Contains(string(b), `"error":"detail larger than the cap"`) {
		t.Fatalf("an uncuttable detail: %s, truncated %v", b, cut)
	}
}
