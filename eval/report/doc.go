// Package report renders an eval.Report: a terminal table ([Table]), JUnit
// XML for CI systems ([JUnit]), one self-contained HTML page ([HTML]: the
// summary, a per-case diff of baseline and candidate, the scores), and a
// progress bar while the cases run ([Progress]). `baton eval --json`
// prints the report itself (encoding/json).
package report
