package summary

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/store"
)

// ValueOwner is the run value ([agent.RunContext].Values, set with
// runner.WithValues) that [OwnerFromValues] reads: the owner as a JSON string.
const ValueOwner = "owner"

// ErrNoOwner is returned by [OwnerFromValues] when the run has no owner value.
var ErrNoOwner = errors.New("summary: the run has no owner value (runner.WithValues(summary.OwnerValues(owner)))")

// OwnerValues returns the run values that carry owner, for runner.WithValues.
func OwnerValues(owner string) map[string]json.RawMessage {
	return map[string]json.RawMessage{ValueOwner: mustJSON(owner)}
}

// OwnerFromValues returns the owner carried by the run values (see
// [OwnerValues]).
func OwnerFromValues(rc *agent.RunContext) (string, error) {
	raw, ok := rc.Values[ValueOwner]
	var owner string
	if !ok || json.Unmarshal(raw, &owner) != nil || owner == "" {
		return "", ErrNoOwner
	}
	return owner, nil
}

// SystemText returns the memory document of agent for owner as it is to be
// injected into the system prompt of a call on thread threadID: "" when
// there is none. A block seeded by a handoff shows its summary only on the
// handoff's child thread and the placeholder everywhere else, so that other
// threads of the same agent never see it; its bookkeeping header line is
// not shown. A malformed document is injected as it is (and logged). It
// reads the memory store once and writes nothing.
func (s *Service) SystemText(ctx context.Context, owner, agentName, threadID string) (string, error) {
	doc, err := s.mem.Get(ctx, owner, agentName)
	if err != nil {
		return "", fmt.Errorf("memory of agent %s: %w", agentName, err)
	}
	b, err := memory.Parse(doc.Content)
	if err != nil {
		s.log.WarnContext(ctx, "agent memory is malformed: injected as it is", "assistant_id", agentName, "error", err)
		return doc.Content, nil
	}
	if b == nil {
		return doc.Content, nil
	}
	h, body := splitHeader(b.Content)
	switch {
	case h.ChildThreadID == "":
		return doc.Content, nil
	case h.ChildThreadID != threadID:
		body = memory.Placeholder
	}
	return doc.Content[:b.Start] + memory.Render(body) + doc.Content[b.End:], nil
}

// System returns a function for runner.Config.System that injects the
// memory of the running agent ([Service.SystemText] with rc.Agent and
// rc.ThreadID) for the owner that owner finds in the run context. A nil
// owner means [OwnerFromValues]: pass runner.WithValues(OwnerValues(owner))
// to every run. A missing owner fails the model call rather than run
// without memory.
func (s *Service) System(owner func(rc *agent.RunContext) (string, error)) func(ctx context.Context, rc *agent.RunContext) (string, error) {
	if owner == nil {
		owner = OwnerFromValues
	}
	return func(ctx context.Context, rc *agent.RunContext) (string, error) {
		o, err := owner(rc)
		if err != nil {
			return "", err
		}
		return s.SystemText(ctx, o, rc.Agent, rc.ThreadID)
	}
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

// Extension returns the runner extension that injects the running agent's
// memory into every model call (see [Service.System]).
func (s *Service) Extension(owner func(rc *agent.RunContext) (string, error)) runner.Extension {
	sys := s.System(owner)
	return runner.ExtensionFuncs{Before: func(ctx context.Context, t *runner.Turn) error {
		text, err := sys(ctx, t.Run)
		if err != nil {
			return fmt.Errorf("agent memory: %w", err)
		}
		t.AddSystem(text)
		return nil
	}}
}
