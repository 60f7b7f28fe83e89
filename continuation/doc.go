// Package continuation is baton's one background path, on River: it hands
// runs from an inline request to a durable background worker and back to
// the client (a continuation), and it adopts the runs of processes that
// died.
//
// Its runner extension ([Service.Extension], registered once by package
// service in the runner of every process) works inside the transaction of
// each checkpoint that threads.Service writes.
//
// An inline run (a library call or an HTTP request) started with
// [Service.RunOptions] stops before executing a slow tool (`slow: true` or
// `continuation: background` in the network file) with status suspended.
// The checkpoint of that stop is written by threads.Service, in one store
// transaction with the run's messages; the extension adds in the same
// transaction:
//
//   - the job-run row, whose idempotency key is the hand-over's event id
//     ([EventID]: run id and checkpoint step), so that a repeated event
//     creates nothing;
//   - the assistant placeholder message (status queued, the event id as its
//     id and as metadata.continuation_id), which clients follow;
//   - the River job ([Args], kind "baton.continue"), with River's InsertTx.
//
// Either all of it commits with the checkpoint or none of it does. If it
// fails, the inline run does not fail: with runner.WithBackgroundFallback
// (part of RunOptions) it answers without tools, with a notice, and the
// failure is logged.
//
// A worker (`baton worker`, or `baton serve` unless --workers 0) works the
// jobs with River on PostgreSQL (riverpgxv5) or on the embedded SQLite
// database (riversqlite). A job claims the run by writing a fenced
// checkpoint, moves the placeholder to streaming (or, when the run starts
// with calls of idempotent tools, makes these writes with the run's first
// write: its first checkpoint or draft flush), resumes the run with
// threads.Service.ResumeCheckpoint, streams progress text into the
// placeholder's draft (package draft: throttled, fanned out to subscribers),
// and, in the same transaction as the run's final checkpoint, completes the
// placeholder with the answer, clears the draft, completes the job-run row
// and completes the River job (River's JobCompleteTx on SQLite; on
// PostgreSQL the same row change as one primary-key UPDATE sent with the
// COMMIT, see pgComplete). Failures are classified with
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
// Leases and adoption: a run executed inline (not by a worker) takes a
// lease for its process at its first checkpoint, in that checkpoint's
// transaction, and releases it in the transaction of the checkpoint that
// stops it; the process renews the leases of the runs it executes every
// [Config].LeaseTTL/3. A process that dies — SIGKILL, power loss, a
// stalled machine — stops renewing: once a lease has expired, the adopters
// of `baton serve` and `baton worker` ([Service.AdoptExpired], every
// AdoptEvery) release it and hand the run to a worker in one transaction,
// with a suspended checkpoint after its last one; the worker resumes it
// from there with the same exactly-once guarantees. A thread is thus
// never blocked by a dead run for longer than LeaseTTL + AdoptEvery plus
// River's fetch (35 seconds and a poll with the defaults). If the former
// process is still alive after all, its next checkpoint is refused as
// stale and it stops.
//
// A continuation's delivery takes the run's lease too, before its claim,
// renewed the same way: when its worker dies, an adopter moves the job run
// from processing to error and makes River's job, still running for the
// dead worker, available again, so that the continuation resumes within
// LeaseTTL × 1.5 rather than after River's rescue (RescueStuckJobsAfter,
// the last resort).
//
// River's own tables are created by River's migrator, run by [Service.Start]
// (or [Service.Migrate]) under a lock, after the store's migrations.
package continuation
