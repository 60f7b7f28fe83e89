// Package telemetry wires baton's observability: OpenTelemetry traces that
// follow the GenAI semantic conventions, Prometheus metrics built on the
// OpenTelemetry metric API, and slog loggers that redact secrets.
//
// [New] builds a [Telemetry] from a [Config]; [FromEnv] makes that Config
// from the standard OTEL_* environment variables. Everything is off unless
// asked for: with tracing, metrics and the run log all off,
// [Telemetry.Observer] returns nil and the runner uses its built-in no-op
// observer, so telemetry costs nothing.
//
// The observer given to runner.Config.Observer makes, per run:
//
//	invoke_agent <first agent>        (root, or child of the caller's span)
//	├── chat <model>                  one per model call attempt
//	├── execute_tool <tool>           one per tool or agent-tool call
//	└── baton.transfer                one per transfer attempt (ok, rejected, limit)
//
// and feeds the baton_* metrics served by [Telemetry.MetricsHandler]. With
// a run log (Config.RunLog, or [Telemetry.LoggingObserver]) it also logs
// "run started" and "run ended" for each run, with the run's trace_id, so
// that an operator joins a run's log lines to its trace.
//
// A run that continues in a background worker continues its trace through
// the job's metadata: the request side stores [Inject] in the job, the
// worker starts its span with [Telemetry.StartLinked], a new trace that
// links back to the request's span; the worker's run log lines carry that
// request's trace id as linked_trace_id.
//
// The span names, attributes, metric names and labels, environment
// variables and log fields are listed in docs/observability.md.
package telemetry
