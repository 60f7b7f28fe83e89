package runstate_test

import (
	"regexp"
	"testing"

	"github.com/batonhq/baton/runstate"
)

func TestIDFormats(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, got, want string
	}{
		{"MessageID input", runstate.MessageID("run_abc", 1), "run_abc-m1"},
		{"MessageID", runstate.MessageID("r1", 12), "r1-m12"},
		{"InterruptID", runstate.InterruptID("run_abc", 4), "run_abc-i4"},
		{"TransferID", runstate.TransferID("run_abc", 2), "run_abc-h2"},
		{"ReturnID", runstate.ReturnID(runstate.TransferID("r1", 1)), "r1-h1-r"},
		{"ContinuationID", runstate.ContinuationID("run_abc", 3), "run_abc-c3"},
		{"SubRunID", runstate.SubRunID("run_abc", "call_7"), "run_abc/call_7"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestRunOfInterrupt(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		id, run string
		isOK    bool
	}{
		{"run_abc-i4", "run_abc", true},
		{runstate.InterruptID("r1", 12), "r1", true},
		{"my-iffy-run-i2", "my-iffy-run", true},
		{"a-i1-i2", "a-i1", true},
		{"run_abc", "", false},
		{"-i3", "", false},
		{"run_abc-i", "", false},
		{"run_abc-ix", "", false},
		{"run_abc-i3x", "", false},
		{"run_abc-i-3", "", false},
		{"", "", false},
	} {
		t.Run(tt.id, func(t *testing.T) {
			t.Parallel()
			run, ok := runstate.RunOfInterrupt(tt.id)
			if run != tt.run || ok != tt.isOK {
				t.Errorf("RunOfInterrupt(%q) = %q, %v; want %q, %v", tt.id, run, ok, tt.run, tt.isOK)
			}
		})
	}
}

func TestNewRunID(t *testing.T) {
	t.Parallel()
	format := regexp.MustCompile(`^run_[a-z2-7]{26}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := runstate.NewRunID()
		if !format.MatchString(id) {
			t.Fatalf("NewRunID() = %q, want run_ and 26 of [a-z2-7]", id)
		}
		if seen[id] {
			t.Fatalf("NewRunID() repeated %q", id)
		}
		seen[id] = true
		if run, ok := runstate.RunOfInterrupt(runstate.InterruptID(id, 3)); !ok || run != id {
			t.Fatalf("RunOfInterrupt(InterruptID(%q, 3)) = %q, %v", id, run, ok)
		}
	}
}
