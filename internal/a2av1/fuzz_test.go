package a2av1

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParseEvent: a stream event's data (a 1.0 JSON-RPC response) never
// panics; one that converts converts back to the same 1.0 response.
func FuzzParseEvent(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-12-02T04:00:00Z"},"history":[{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}]}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"m2","role":"ROLE_AGENT","parts":[{"text":"done"}]}}}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"answer","parts":[{"text":"one"},{"data":{"k":1}},{"url":"https://x/y.png","mediaType":"image/png","filename":"y.png"},{"raw":"aGk="}]},"append":true,"lastChunk":true}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"m3","role":"ROLE_AGENT","parts":[]}}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"result":{"task":{"status":{"state":"X"}}}}`, `{"result":{"message":{"role":"ROLE_SYSTEM"}}}`,
		`{"result":{"artifactUpdate":{"artifact":{"parts":[{"raw":"!!"}]}}}}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := ParseEvent(b)
		if err != nil {
			return
		}
		r, err := ToResponse(ev)
		if err != nil {
			t.Fatalf("%T from %q does not convert back: %v", ev, b, err)
		}
		again, err := FromResponse(r)
		if err != nil {
			t.Fatalf("the 1.0 response of %q does not convert: %v", b, err)
		}
		r2, err := ToResponse(again)
		if err != nil {
			t.Fatal(err)
		}
		j1, _ := json.Marshal(r)
		j2, _ := json.Marshal(r2)
		if !reflect.DeepEqual(j1, j2) {
			t.Fatalf("round trip of %q:\n%s\n%s", b, j1, j2)
		}
	})
}

// FuzzSendParams: SendMessage params convert to a2a-go's and back to the
// same message.
func FuzzSendParams(f *testing.F) {
	for _, s := range []string{
		`{"message":{"messageId":"m1","contextId":"c1","taskId":"t1","role":"ROLE_USER","parts":[{"text":"hello"},{"data":{"type":"approve"}}],"referenceTaskIds":["t0"]},"configuration":{"historyLength":2,"returnImmediately":true}}`,
		`{"message":{"messageId":"m1","role":"user","parts":[{"url":"https://a/b","mediaType":"text/plain"}]}}`,
		`{"message":null}`, `{"message":{"role":"ROLE_USER","parts":[{}]}}`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p SendParams
		if json.Unmarshal(b, &p) != nil {
			return
		}
		q, err := FromSend(&p)
		if err != nil {
			return
		}
		back := ToSend(q)
		q2, err := FromSend(back)
		if err != nil {
			t.Fatalf("params of %q do not convert back: %v", b, err)
		}
		j1, _ := json.Marshal(ToSend(q2))
		j2, _ := json.Marshal(back)
		if string(j1) != string(j2) {
			t.Fatalf("round trip of %q:\n%s\n%s", b, j1, j2)
		}
	})
}
