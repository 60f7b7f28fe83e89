package continuation

import (
	"slices"
	"testing"

	"github.com/batonhq/baton/runstate"
)

// TestLeasesHoldOncePerExecution: an execution's first boundary written
// again (its transaction rolled back and retried) holds the run's lease
// once, so that the run's end releases it; two executions of one run hold
// it until both end.
func TestLeasesHoldOncePerExecution(t *testing.T) {
	l := newLeases()
	a, b := &runstate.State{RunID: "r"}, &runstate.State{RunID: "r"}
	l.hold("r", a)
	l.hold("r", a)
	l.drop("r", a)
	if !l.empty() {
		t.Fatalf("held after the execution's end: %v", l.ids())
	}
	l.hold("r", a)
	l.hold("r", b)
	l.drop("r", a)
	if ids := l.ids(); !slices.Equal(ids, []string{"r"}) {
		t.Fatalf("held %v, want r (the second execution runs)", ids)
	}
	l.drop("r", b)
	l.drop("r", b) // a run's end without a hold
	if !l.empty() {
		t.Fatalf("held after both ended: %v", l.ids())
	}
}
