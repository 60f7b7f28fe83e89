package a2aremote_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/batonhq/baton/a2aremote"
)

// FuzzEvents decodes a remote's stream (one JSON event per line) as the
// SDK does and folds it into a turn: never a panic, and the deltas shown
// are the start of the answer of a task that completed (unless the remote
// replaced text it had sent).
func FuzzEvents(f *testing.F) {
	for _, s := range []string{
		`{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"working"},"final":false}
{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"kind":"text","text":"Hel"}]}}
{"kind":"artifact-update","taskId":"t","contextId":"c","append":true,"artifact":{"artifactId":"a","parts":[{"kind":"text","text":"lo"}]}}
{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"completed"},"final":true}`,
		`{"kind":"task","id":"t","contextId":"c","status":{"state":"input-required","message":{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"Which?"}]}}}`,
		`{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"data","data":{"a":1}},{"kind":"file","file":{"uri":"http://x/f"}}]}`,
		`{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"failed"},"final":true}`,
		`{"kind":"task","id":"t","contextId":"c","status":{"state":"completed"},"artifacts":[{"artifactId":"a","parts":[]},{"artifactId":"b","parts":[{"kind":"text","text":"x"}]}],"metadata":{"baton":{"usage":{"input_tokens":"x"}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var events []a2a.Event
		// replaced: the remote replaced text it had sent (an artifact sent
		// again whole, a task snapshot): deltas cannot be taken back.
		replaced, seen := false, map[a2a.ArtifactID]bool{}
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			ev, err := a2a.UnmarshalEventJSON(line)
			if err != nil || ev == nil {
				continue
			}
			switch e := ev.(type) {
			case *a2a.TaskArtifactUpdateEvent:
				if e.Artifact != nil {
					replaced = replaced || seen[e.Artifact.ID] && !e.Append
					seen[e.Artifact.ID] = true
				}
			case *a2a.Task:
				replaced = replaced || len(seen) > 0
			}
			events = append(events, ev)
		}
		deltas, msg, settled, err := a2aremote.Fold(events)
		if !settled || err != nil || replaced {
			return
		}
		if md, _ := msg.Metadata[a2aremote.MetadataKey].(map[string]any); md["state"] == "completed" && !strings.HasPrefix(msg.Text(), deltas) {
			t.Fatalf("deltas %q are not the start of the answer %q", deltas, msg.Text())
		}
	})
}
