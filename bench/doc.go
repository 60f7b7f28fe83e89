// Package bench holds the benchmarks of baton's core runtime: one
// triage → specialist transfer, a chain of 10 transfers, a single turn and a
// streamed transfer, all with instant models so that only the runner's own
// overhead is measured. The benchmarks live in the package's tests; see
// README.md for how to run them against the peer framework in peers/, and
// RESULTS.md for the recorded numbers.
package bench
