package modeltest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/modeltest"
)

// fake is an in-memory model that plays a scenario, with optional defects.
type fake struct {
	sc  modeltest.Scenario
	bug string
}

func (f *fake) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		if f.bug == "LeaksGoroutine" {
			go func() { time.Sleep(time.Hour) }()
		}
		if f.bug == "ModifiesRequest" {
			req.Messages[0].Parts[0].Text = "changed"
		}
		if ctx.Err() != nil && f.bug != "IgnoresCancel" {
			yield(model.Chunk{}, fmt.Errorf("fake: %w", ctx.Err()))
			return
		}
		sc := f.sc
		switch sc.Kind {
		case modeltest.KindStall:
			if !yield(model.Chunk{Type: model.ChunkText, Text: sc.Text}, nil) {
				if f.bug != "KeepsConnection" {
					sc.OnDisconnect()
				}
				return
			}
			if f.bug == "IgnoresCancel" {
				time.Sleep(time.Hour)
			}
			<-ctx.Done()
			sc.OnDisconnect()
			err := error(fmt.Errorf("fake: %w", ctx.Err()))
			if f.bug == "TransientCancel" {
				err = &model.Error{Provider: "fake", Transient: true, Err: ctx.Err()}
			}
			yield(model.Chunk{}, err)
			return
		}
		msg := &message.Message{Role: message.RoleAssistant}
		text := sc.Text
		if f.bug == "TextMismatch" {
			text += "!"
		}
		if text != "" {
			msg.Parts = append(msg.Parts, message.Part{Type: message.PartText, Text: text})
			h := len(sc.Text) / 2
			if !yield(model.Chunk{Type: model.ChunkText, Text: sc.Text[:h]}, nil) || !yield(model.Chunk{Type: model.ChunkText, Text: sc.Text[h:]}, nil) {
				return
			}
		}
		for i, c := range sc.Calls {
			if f.bug == "DuplicateCallID" {
				c.ID = sc.Calls[0].ID
			}
			msg.Parts = append(msg.Parts, message.Part{Type: message.PartToolCall, CallID: c.ID, Name: c.Name, Arguments: c.Arguments})
			chunk := c
			if f.bug == "CallChunkMismatch" && i == 1 {
				chunk.Arguments = json.RawMessage(`{"a":0}`)
			}
			if !yield(model.Chunk{Type: model.ChunkToolCall, ToolCall: &chunk}, nil) {
				return
			}
		}
		finish := "stop"
		if len(sc.Calls) > 0 {
			finish = "tool_calls"
		}
		u := message.Usage{InputTokens: 10, OutputTokens: 5}
		msg.Usage = &u
		done := model.Chunk{Type: model.ChunkDone, Message: msg, Usage: u, FinishReason: finish, Model: "fake-1"}
		if f.bug == "NoDone" {
			return
		}
		if !yield(done, nil) {
			return
		}
		if f.bug == "TwoDone" {
			yield(done, nil)
		}
	}
}

func factory(bug string) modeltest.Factory {
	return func(t *testing.T, sc modeltest.Scenario) model.Model { return &fake{sc: sc, bug: bug} }
}

// TestReferenceModel: a correct in-memory model passes the whole suite.
func TestReferenceModel(t *testing.T) {
	modeltest.Run(t, factory(""))
}

// TestSuiteCatchesBrokenModels runs the suite, in a child process, against
// models with one defect each and checks that it fails for the right reason.
func TestSuiteCatchesBrokenModels(t *testing.T) {
	if os.Getenv("MODELTEST_BUG") != "" {
		t.Skip("child process")
	}
	t.Parallel()
	for bug, want := range map[string]string{
		"TwoDone":           "item",
		"NoDone":            "ChunkDone",
		"TextMismatch":      "text chunks add up to",
		"CallChunkMismatch": "tool-call chunks differ",
		"DuplicateCallID":   "duplicate call id",
		"LeaksGoroutine":    "goroutine(s) of",
		"KeepsConnection":   "connection stayed open",
		"IgnoresCancel":     "did not stop",
		"TransientCancel":   "cancellation reported as transient",
		"ModifiesRequest":   "request modified",
	} {
		t.Run(bug, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenModelChild$", "-test.v")
			cmd.Env = append(os.Environ(), "MODELTEST_BUG="+bug)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a model with bug %s:\n%s", bug, out)
			}
			if !strings.Contains(string(out), want) {
				t.Errorf("the suite failed without saying %q:\n%s", want, out)
			}
		})
	}
}

func TestBrokenModelChild(t *testing.T) {
	bug := os.Getenv("MODELTEST_BUG")
	if bug == "" {
		t.Skip("run by TestSuiteCatchesBrokenModels")
	}
	modeltest.Run(t, factory(bug))
}
