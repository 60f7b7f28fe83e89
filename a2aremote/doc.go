// Package a2aremote makes a remote A2A agent an agent of a baton network,
// on the A2A Go SDK (github.com/a2aproject/a2a-go). A network file declares
// it by its agent card (an agent's remote:); [Factory] is
// netspec.Options.Remote. The remote agent is the agent's model: it is a
// transfer target and an agent tool like any other agent, and its
// streaming answer arrives as the run's text deltas.
//
// A turn of the remote agent sends the conversation's last user message to
// the remote (message/stream, or message/send when its card does not
// stream): on first contact with the earlier messages of the history (and
// the system prompt the runner built: transfer context, memory) in a data
// part {"history": [...]}, afterwards in the remote's own context
// (contextId), continuing its task when it asked for input. The answer's
// message carries metadata "a2a" (context_id, task_id, state), which is
// how the next turn finds the remote's context.
//
// The remote task's id is saved in the run's state (agent.Memo, a
// checkpoint) as soon as the remote names it and before any of its text is
// shown. A turn that finds it — a retry, or a run resumed after its process
// died — picks the task up (tasks/get, then tasks/resubscribe) instead of
// sending the message again. When the remote's stream breaks (the remote
// process was killed), the turn follows the task again for up to the
// remote's reconnect: (60 seconds by default), resuming the answer where it
// was; then the turn fails with a transient model error, which the runner
// retries and which leaves a failed run resumable: resumed, it picks the
// same task up again.
//
// A remote task that fails, is rejected or canceled fails the turn (an
// agent tool's caller gets an error result); one that needs input
// (input-required, auth-required) is the agent's answer, and the next turn
// answers it.
package a2aremote
