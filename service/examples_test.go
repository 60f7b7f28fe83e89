package service_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/threads"
)

// turn is one turn of examples/testdata/conversations.json.
type turn struct {
	User   string `json:"user"`
	Answer string `json:"answer"`
}

// conversations returns the six-turn conversation of each example network.
func conversations(t *testing.T) map[string][]turn {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", "testdata", "conversations.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	out := map[string][]turn{}
	for name, r := range raw {
		if name == "_" {
			continue
		}
		var turns []turn
		if err := json.Unmarshal(r, &turns); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = turns
	}
	return out
}

// TestExamplesHoldAConversation: every example network answers six ordinary
// turns on one thread (the scripted model's rules and replies go on where
// its script ends), through the service every command uses.
func TestExamplesHoldAConversation(t *testing.T) {
	t.Parallel()
	convs := conversations(t)
	dirs, _ := filepath.Glob(filepath.Join("..", "examples", "*", "network.yaml"))
	if len(dirs) != len(convs) {
		t.Fatalf("%d example networks, %d conversations: every example needs one", len(dirs), len(convs))
	}
	for name, turns := range convs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if len(turns) < 6 {
				t.Fatalf("%d turns, want six", len(turns))
			}
			svc, err := service.Open(t.Context(), service.Config{Files: []string{example(name)}, Database: "sqlite:" + filepath.Join(t.TempDir(), "baton.db")})
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			n, _ := svc.Network(name)
			thread := ""
			for i, tt := range turns {
				var last string
				var end *runner.RunEndEvent
				for ev, err := range n.Threads.Turn(t.Context(), "ann", tt.User, threads.TurnOptions{ThreadID: thread}) {
					if err != nil {
						t.Fatalf("turn %d %q: %v", i+1, tt.User, err)
					}
					switch e := ev.(type) {
					case *runner.RunStartEvent:
						if thread != "" && e.ThreadID != thread {
							t.Fatalf("turn %d ran on thread %s, not %s", i+1, e.ThreadID, thread)
						}
						thread = e.ThreadID
					case *runner.MessageEvent:
						last = e.Text
					case *runner.RunEndEvent:
						end = e
					}
				}
				if end == nil || end.Status != runstate.StatusCompleted {
					t.Fatalf("turn %d %q ended %+v", i+1, tt.User, end)
				}
				if !strings.Contains(last, tt.Answer) {
					t.Errorf("turn %d %q: answer %q lacks %q", i+1, tt.User, last, tt.Answer)
				}
			}
		})
	}
}
