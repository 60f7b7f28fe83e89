// Package eval is `baton eval`: it runs the cases of an eval set (package
// eval/evalset) on a network, and on a baseline network beside it, and
// scores them (package eval/metric). Runs go through the same assembly as
// every baton command (package service: the network file loaded by
// service.Load, a service.Service on a private in-memory SQLite database,
// turns on threads); a case's recording answers its tools and its
// unchanged agents at the model and tool seams (package eval/replay), so
// that only what changed calls a live model and nothing has side effects.
//
// [Export] turns stored threads into cases with their recording; the
// reports (terminal table, JSON, JUnit, HTML) are package eval/report.
package eval
