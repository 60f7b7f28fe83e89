// Package threads runs conversation turns on stored threads: it loads a
// thread's history and its active agent, runs the turn with a checkpointer
// that writes each checkpoint (fenced) together with the messages produced
// since the last one and the active agent, in one store transaction, and
// resumes stopped runs (interrupts, crashes) from their latest checkpoint.
//
// It is the piece between runner (which never imports store) and the store;
// the CLI, the server and the background worker use it.
package threads
