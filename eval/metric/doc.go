// Package metric scores what a turn did (an evalset.Outcome) against what
// was expected of it (an evalset.Expect): routing (the first agent), the
// transfer trajectory (agents and typed context fields), the tool
// trajectory (exact, in order or in any order; arguments exactly or by
// listed fields), the final status, and the answer (contains, regular
// expression, JSON Schema, ROUGE-1 at a threshold, rubrics judged by a
// named model). Each expectation is a [Check] with a score from 0 to 1 and
// a threshold; [Changes] says what differs between two outcomes.
package metric
