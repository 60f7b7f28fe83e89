// Package threads runs conversation turns on stored threads: it loads a
// thread's history and its active agent, runs the turn with a checkpointer
// that writes each checkpoint (fenced) together with the messages produced
// since the last one and the active agent, in one store transaction, and
// resumes stopped runs (interrupts, crashes) from their latest checkpoint.
//
// A new turn on a busy thread follows its multitask strategy
// ([Service.Submit]: reject, enqueue, interrupt, rollback): the thread's
// queue is durable (its metadata), each new run's first checkpoint takes
// the thread's lock and checks that it is free (or that the run is the
// queue's next), and a run that ends starts the next ([Service.Kick]).
//
// It is the piece between runner (which never imports store) and the store;
// the CLI, the server and the background worker use it.
package threads
