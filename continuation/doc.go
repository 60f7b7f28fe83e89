// Package continuation hands runs from an inline request to a durable
// background worker and back to the client: the request → worker handoff.
//
// An inline run (a library call or an HTTP request) started with
// [Service.RunOptions] stops before executing a slow tool (`slow: true` or
// `continuation: background` in the network file) with status suspended.
// The checkpoint of that stop is written by threads.Service, in one store
// transaction with the run's messages; [Service.Hook], called inside that
// transaction, adds in the same transaction:
//
//   - the job-run row, whose idempotency key is the hand-over's event id
//     ([EventID]: run id and checkpoint step), so that a repeated event
//     creates nothing;
//   - the assistant placeholder message (status queued, the event id as its
//     id and as metadata.handoff_event_id), which clients follow;
//   - the River job ([Args], kind "baton.continue"), with River's InsertTx.
//
// Either all of it commits with the checkpoint or none of it does. If it
// fails, the inline run does not fail: with runner.WithBackgroundFallback
// (part of RunOptions) it answers without tools, with a notice, and the
// failure is logged.
//
// A worker (`baton worker`, or `baton serve` unless --no-workers) works the
// jobs with River on PostgreSQL (riverpgxv5) or on the embedded SQLite
// database (riversqlite). A job claims the run by writing a fenced
// checkpoint, moves the placeholder to streaming, resumes the run with
// threads.Service.ResumeCheckpoint, streams progress text into the
// placeholder's draft (package draft: throttled, fanned out to subscribers),
// and, in the same transaction as the run's final checkpoint, completes the
// placeholder with the answer, clears the draft, completes the job-run row
// and completes the River job (JobCompleteTx). Failures are classified with
// runner.KindOf and store errors: transient ones are retried with backoff
// from the last checkpoint, permanent ones (including a checkpoint of an
// incompatible network version) put the placeholder in error with a
// user-safe text, while the detail goes to the job-run row and the log.
//
// Exactly once: the runner records each tool result in the run state and
// checkpoints it the moment the tool returns, so a resumed run never
// re-executes a recorded call; a call cut off by a crash runs again with the
// same idempotency key (agent.CallFromContext, run id + call id), which the
// tool uses to de-duplicate. Checkpoint writes are fenced, so a worker that
// lost its job cannot overwrite a newer checkpoint: its writes fail with a
// *store.StaleWriteError. A job run being worked is leased for
// [Config.JobTimeout]: a duplicate delivery during the lease snoozes, a
// delivery of a finished job is a no-op. River's unique jobs allow one job
// per thread at a time, and River's rescuer retries jobs orphaned by a
// crashed worker after [Config.RescueStuckJobsAfter], from the latest
// checkpoint.
//
// River's own tables are created by River's migrator, run by [Service.Start]
// (or [Service.Migrate]) under a lock, after the store's migrations.
package continuation
