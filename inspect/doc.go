// Package inspect shows what a run did and lets it be steered (issue 35,
// docs/inspect.md): every model call of a run recorded with the run —
// the request as sent, the answer, usage, timing, retries — and every
// tool call and transfer ([Extension], written in the checkpoint's
// transaction through runner.Boundary.Calls); a run's steps built from
// those records, its checkpoints and its interrupts ([Steps], [GetStep]);
// the retention of the records ([Sweep]).
//
// Forks of threads are package threads' (threads.Service.Fork).
package inspect
