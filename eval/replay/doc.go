// Package replay answers a case's run from its recording, at the model and
// tool seams: [Model] wraps an agent's model so that an agent whose
// fingerprint is unchanged since the recording gets its recorded answer
// instead of calling the model, and [Tool] wraps a tool's function so that
// a call with a recorded result gets that result and runs nothing. Calls
// without a recording are reported ([Session.Unmatched]) and answered
// with an error, or run for real when the session allows live tools.
//
// A [Session], carried by the run's context ([WithSession]), holds one
// turn's recording and what happened. The run follows the recording as
// long as every model answer and tool result is the recorded one, in
// order; once it leaves it (a changed agent answers otherwise, a call has
// no recording, another agent is asked), it has diverged and every later
// model call is live: an unchanged agent is answered from its recording
// only when everything before its call was as recorded.
package replay
