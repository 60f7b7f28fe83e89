package transfer

import (
	"context"
	"log/slog"

	"github.com/batonhq/baton/message"
)

// Prepared is the target's starting history and what was applied to make it.
type Prepared struct {
	Messages []message.Message
	// Applied names the transforms that succeeded, in order.
	Applied []string
}

// Prepare builds the target's history from the source's working history src
// (which ends with the transfer call and its result) by the history policy,
// the system-message rule and the transforms, in that order. The result
// always satisfies the pairing invariant. src is not modified. A transform
// that fails is skipped and logged with logger (nil means slog.Default()).
func (tr *Transfer) Prepare(ctx context.Context, logger *slog.Logger, src []message.Message, sourceSystem string, tc *Context) Prepared {
	var out []message.Message
	switch tr.Policy() {
	case HistoryLastUser:
		for i := len(src) - 1; i >= 0; i-- {
			if src[i].Role == message.RoleUser {
				out = []message.Message{src[i]}
				break
			}
		}
	case HistoryNone:
	default:
		out = src
	}
	if len(out) == 0 {
		// A model call needs at least one message; state the transfer instead.
		out = []message.Message{message.User(noHistoryText(tc))}
	}
	if tr.SystemMessage && sourceSystem != "" {
		withSys := make([]message.Message, 0, len(out)+1)
		withSys = append(withSys, message.System(sourceSystem))
		out = append(withSys, out...)
	}
	p := Prepared{Messages: message.Repair(out, message.DropOrphans)}
	for _, t := range tr.Transforms {
		next, err := t.Apply(ctx, p.Messages)
		if err == nil && len(next) == 0 {
			err = errEmpty
		}
		if err != nil {
			if logger == nil {
				logger = slog.Default()
			}
			logger.WarnContext(ctx, "transfer transform failed; keeping the untransformed history",
				"transform", t.Name(), "from", tc.From, "to", tc.To, "transfer_id", tc.ID, "error", err)
			continue
		}
		p.Messages = message.Repair(next, message.DropOrphans)
		p.Applied = append(p.Applied, t.Name())
	}
	return p
}

func noHistoryText(tc *Context) string {
	s := "The conversation was transferred to you by " + tc.From + "."
	if tc.Reason != "" {
		s += " Reason: " + tc.Reason
	}
	return s
}
