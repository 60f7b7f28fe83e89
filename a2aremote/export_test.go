package a2aremote

import (
	"context"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
)

// Fold takes events into a turn as a stream would and returns the deltas
// it yielded and its answer.
func Fold(events []a2a.Event) (deltas string, msg *message.Message, settled bool, err error) {
	var b strings.Builder
	t := &turn{a: &Agent{name: "fuzz"}, texts: map[a2a.ArtifactID]string{}, yield: func(c model.Chunk, _ error) bool {
		b.WriteString(c.Text)
		return true
	}}
	for _, ev := range events {
		done, err := t.apply(context.Background(), ev)
		if err != nil {
			return b.String(), nil, false, err
		}
		if done {
			settled = true
			break
		}
	}
	if !settled {
		return b.String(), nil, false, nil
	}
	msg, err = t.answer()
	return b.String(), msg, true, err
}
