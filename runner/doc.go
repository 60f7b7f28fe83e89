// Package runner runs the agent loop of a network: model → tool calls →
// transfer detection → next agent, with limits (turns, transfers, ping-pong,
// token budget, wall-clock timeout), retries of transient model and tool
// errors, per-agent guardrails, approval interrupts, a background boundary,
// and checkpoints at every step boundary through a [Checkpointer].
//
// A run returns a [Result] ([Runner.Run]) or streams typed [Event]s
// ([Runner.Stream]). Its whole state is a runstate.State, so a run stopped by
// an interrupt, a background hand-over or a crash is continued with
// [Runner.Resume], in this process or another one.
package runner
