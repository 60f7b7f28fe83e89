package runner

import "github.com/batonhq/baton/runstate"

// Replayable reports whether what a run resumed from st does before
// anything of it is written may be done again after a crash without a
// second effect: every pending call of st without a result is of an
// idempotent tool ([agent.Tool].Idempotent) or needs no tool, as
// [WithDeferredResults] has it. Its model calls are made again too. A
// resumed run's first write precedes every other call: the calls a model
// turn asks for are checkpointed before they run.
//
// A background worker uses it to claim such a run with the run's first
// write rather than in a transaction before it.
func (r *Runner) Replayable(st *runstate.State) bool {
	p := r.plans[st.Agent]
	if p == nil || st.Interrupt != nil {
		return false
	}
	for i := range st.Pending {
		if st.Pending[i].Result == nil && !replayable(p, &st.Pending[i]) {
			return false
		}
	}
	return true
}
