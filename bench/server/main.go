// Command server is the load benchmark of `baton serve` (not a test; CI
// builds it but does not run it). It measures, on loopback, with the
// scripted model:
//
//   - TTFB overhead: the time from sending POST /v1/threads/{id}/runs
//     (stream) to the first text_delta event, minus the model's own time to
//     its first token (the scripted model yields it after -model-delay), at
//     concurrency -ttfb-concurrency, p50 and p99;
//   - streams held: -streams concurrent streaming conversations whose model
//     has sent its first token and then holds the stream open;
//   - memory per open stream: the server's RSS and Go heap with the streams
//     open, minus before, divided by the streams;
//   - memory per idle subscriber (-subscribers): -streams clients following
//     a thread's events (GET /v1/threads/{id}/events) on threads with no
//     run, each one's first event (the thread snapshot) read, measured the
//     same way; closed before the runs are held.
//
// The server runs in a child process (this binary with -role=server), so
// that its RSS is its own and each process stays under the file descriptor
// limit (one socket per stream on each side). run.sh raises `ulimit -n`
// and records the command in bench/RESULTS.md's Server section.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	role := flag.String("role", "client", "client (the benchmark) or server (the child process)")
	streams := flag.Int("streams", 10000, "concurrent streaming conversations to hold open")
	batch := flag.Int("batch", 100, "streams opened at once")
	ttfbN := flag.Int("ttfb", 2000, "runs timed for the TTFB overhead")
	ttfbConc := flag.Int("ttfb-concurrency", 1, "concurrency of the TTFB runs")
	modelDelay := flag.Duration("model-delay", 20*time.Millisecond, "the scripted model's time to its first token")
	hold := flag.Duration("hold", 30*time.Second, "how long the streams are held open once all are open")
	subscribers := flag.Bool("subscribers", true, "before the held runs, measure idle subscribers: -streams GET /v1/threads/{id}/events streams on threads with no run")
	dir := flag.String("dir", "", "directory of the server's SQLite database (default: a temporary directory)")
	cpuProfile := flag.String("cpuprofile", "", "write the server's CPU profile of the TTFB phase to this file")
	traceFile := flag.String("trace", "", "write the server's execution trace of the TTFB phase to this file (go tool trace; -pprof=syscall shows the fsyncs)")
	flag.Parse()
	var err error
	if *role == "server" {
		err = serve(*dir, *modelDelay, *streams, *cpuProfile, *traceFile)
	} else {
		err = bench(*streams, *batch, *ttfbN, *ttfbConc, *modelDelay, *hold, *dir, *cpuProfile, *traceFile, *subscribers)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/server:", err)
		os.Exit(1)
	}
}
