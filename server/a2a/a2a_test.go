package a2a_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/servertest"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/batonhq/baton/internal/a2av1"
	"github.com/batonhq/baton/internal/httpheader"
)

// a2aTransport is an A2A client of a served network with an API key: the
// Go SDK's (protocol 0.3).
func a2aTransport(b *servertest.Bundle, network, key string) a2aclient.Transport {
	hc := &http.Client{Transport: httpheader.Transport(nil, map[string]string{"Authorization": "Bearer " + key})}
	return a2aclient.NewJSONRPCTransport(b.URL+"/a2a/"+network, hc)
}

// a2aTransport1 is an A2A client of a served network that speaks protocol
// 1.0 (a2av1: SendMessage, SendStreamingMessage, GetTask, CancelTask,
// SubscribeToTask, and 1.0's shapes).
func a2aTransport1(b *servertest.Bundle, network, key string) a2aclient.Transport {
	hc := &http.Client{Transport: httpheader.Transport(nil, map[string]string{"Authorization": "Bearer " + key})}
	return a2av1.NewTransport(b.URL+"/a2a/"+network, hc)
}

// a2aStream is what a message/stream or tasks/resubscribe gave: the
// events, the answer the artifact updates build and the last status.
type a2aStream struct {
	events []a2a.Event
	answer string
	Status a2a.TaskStatus
	final  bool
}

func collectA2A(t *testing.T, events func(yield func(a2a.Event, error) bool)) *a2aStream {
	t.Helper()
	s := &a2aStream{}
	for ev, err := range events {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		s.events = append(s.events, ev)
		switch e := ev.(type) {
		case *a2a.Task:
			s.Status, s.answer = e.Status, answerOf(e)
		case *a2a.TaskArtifactUpdateEvent:
			text := partsText(e.Artifact.Parts)
			if e.Append {
				s.answer += text
			} else {
				s.answer = text
			}
		case *a2a.TaskStatusUpdateEvent:
			s.Status, s.final = e.Status, e.Final
		}
	}
	return s
}

func partsText(ps a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range ps {
		if t, ok := p.(a2a.TextPart); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func answerOf(task *a2a.Task) string {
	for _, a := range task.Artifacts {
		if a.ID == "answer" {
			return partsText(a.Parts)
		}
	}
	return ""
}

func userA2A(text string) *a2a.Message {
	return a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: text})
}

// TestA2A: the served side of A2A on the A2A Go SDK's client (the official
// JavaScript client drives it in e2e's TestA2AJavaScriptClient): a task
// waiting for a decision answered by a streamed message on the task goes
// on to its end (not the old input-required state), a non-blocking send
// returns at once, a background run streams through its hand-over, and
// another owner does not see the task.
func TestA2A(t *testing.T) {
	t.Parallel()
	for _, v := range []struct {
		name string
		tr   func(b *servertest.Bundle, network, key string) a2aclient.Transport
	}{{"0.3", a2aTransport}, {"1.0", a2aTransport1}} {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			testA2A(t, v.tr)
		})
	}
}

// testA2A is TestA2A with the clients of a protocol version.
func testA2A(t *testing.T, a2aTransport func(b *servertest.Bundle, network, key string) a2aclient.Transport) {
	b := servertest.Setup(t)
	ctx := t.Context()
	support := a2aTransport(b, "support", b.KeyA)

	t.Run("InterruptAnsweredByStream", func(t *testing.T) {
		waiting := collectA2A(t, support.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: userA2A("I want a refund for order 1234")}))
		if waiting.Status.State != a2a.TaskStateInputRequired || !waiting.final {
			t.Fatalf("refund: state %s, final %v", waiting.Status.State, waiting.final)
		}
		task := waiting.events[0].(*a2a.Task)
		approve := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.DataPart{Data: map[string]any{"type": "approve"}})
		done := collectA2A(t, support.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: approve}))
		if done.Status.State != a2a.TaskStateCompleted || !done.final || !strings.Contains(done.answer, "Your refund R-77") {
			t.Fatalf("approved: state %s, final %v, answer %q", done.Status.State, done.final, done.answer)
		}
		got, err := support.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
		if err != nil || got.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("tasks/get: %v %+v", err, got)
		}
		// The blocking send answers a task the same way.
		waiting = collectA2A(t, support.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: userA2A("I want a refund for order 1234")}))
		task = waiting.events[0].(*a2a.Task)
		res, err := support.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.TextPart{Text: "reject"})})
		if err != nil {
			t.Fatal(err)
		}
		if rt, ok := res.(*a2a.Task); !ok || rt.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("rejected by message/send: %+v", res)
		}
	})

	t.Run("NonBlocking", func(t *testing.T) {
		blocking := false
		res, err := support.SendMessage(ctx, &a2a.MessageSendParams{Message: userA2A("The app crashes when I log in"), Config: &a2a.MessageSendConfig{Blocking: &blocking}})
		if err != nil {
			t.Fatal(err)
		}
		task, ok := res.(*a2a.Task)
		if !ok || task.ID == "" {
			t.Fatalf("non-blocking send: %+v", res)
		}
		deadline := time.Now().Add(30 * time.Second)
		for task.Status.State != a2a.TaskStateCompleted {
			if time.Now().After(deadline) {
				t.Fatalf("the task is %s after 30s", task.Status.State)
			}
			time.Sleep(50 * time.Millisecond)
			if task, err = support.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID}); err != nil {
				t.Fatal(err)
			}
		}
		if !strings.Contains(answerOf(task), "Log-in is degraded") {
			t.Errorf("answer %q", answerOf(task))
		}
	})

	t.Run("BackgroundRun", func(t *testing.T) {
		research := a2aTransport(b, "research", b.KeyA)
		s := collectA2A(t, research.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: userA2A("How did EV sales develop in 2025?")}))
		if s.Status.State != a2a.TaskStateCompleted || !strings.Contains(s.answer, "Report **RPT-42** is ready") {
			t.Fatalf("state %s, answer %q", s.Status.State, s.answer)
		}
		again := collectA2A(t, research.ResubscribeToTask(ctx, &a2a.TaskIDParams{ID: s.events[0].(*a2a.Task).ID}))
		if again.Status.State != a2a.TaskStateCompleted || again.answer != s.answer {
			t.Errorf("resubscribed: state %s, answer %q, want %q", again.Status.State, again.answer, s.answer)
		}
	})

	t.Run("OtherOwner", func(t *testing.T) {
		res, err := support.SendMessage(ctx, &a2a.MessageSendParams{Message: userA2A("Hi there")})
		if err != nil {
			t.Fatal(err)
		}
		bob := a2aTransport(b, "support", b.KeyB)
		if _, err := bob.GetTask(ctx, &a2a.TaskQueryParams{ID: res.(*a2a.Task).ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Errorf("another owner's task: %v, want task not found", err)
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if _, err := bob.CancelTask(cctx, &a2a.TaskIDParams{ID: res.(*a2a.Task).ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Errorf("tasks/cancel of another owner's task: %v, want task not found", err)
		}
		// The owner's: a completed task is not cancelable.
		if _, err := support.CancelTask(cctx, &a2a.TaskIDParams{ID: res.(*a2a.Task).ID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
			t.Errorf("tasks/cancel of a completed task: %v, want not cancelable", err)
		}
	})

	t.Run("Cancel", func(t *testing.T) {
		// A task waiting for input is cancelled (the run ends cancelled,
		// its interrupt superseded); cancelling it again answers the same.
		waiting := collectA2A(t, support.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: userA2A("I want a refund for order 1234")}))
		task := waiting.events[0].(*a2a.Task)
		for range 2 {
			got, err := support.CancelTask(ctx, &a2a.TaskIDParams{ID: task.ID})
			if err != nil || got.Status.State != a2a.TaskStateCanceled || got.ID != task.ID {
				t.Fatalf("tasks/cancel: %v %+v", err, got)
			}
		}
		got, err := support.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
		if err != nil || got.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("tasks/get after the cancel: %v %+v", err, got)
		}
	})
}

// The card serves both protocols: 0.3's url and preferredTransport, and
// 1.0's supportedInterfaces (1.0 first), all at the one endpoint.
func TestCardBothVersions(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	var card struct {
		URL                 string
		PreferredTransport  string
		ProtocolVersion     string
		SupportedInterfaces []a2av1.Interface
	}
	r := b.Do(t, "", "GET", "/a2a/support/.well-known/agent-card.json", nil)
	r.JSON(t, &card)
	want := b.URL + "/a2a/support"
	if r.Status != 200 || card.URL != want || card.PreferredTransport != "JSONRPC" || card.ProtocolVersion != "0.3.0" ||
		len(card.SupportedInterfaces) != 2 || card.SupportedInterfaces[0] != (a2av1.Interface{URL: want, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"}) ||
		card.SupportedInterfaces[1].ProtocolVersion != "0.3.0" {
		t.Fatalf("card: %d %s", r.Status, r.Body)
	}
	if in, ok := a2av1.CardInterface(r.Body); !ok || in.URL != want {
		t.Errorf("the 1.0 interface of the card: %+v %v", in, ok)
	}
}

// 1.0's ListTasks is not served (docs/a2a.md): a method-not-found error,
// as any unknown method.
func TestListTasksNotServed(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	var res struct {
		ID    int
		Error struct{ Code int }
	}
	r := b.Do(t, b.KeyA, "POST", "/a2a/support", map[string]any{"jsonrpc": "2.0", "id": 7, "method": "ListTasks", "params": map[string]any{"pageSize": 10}})
	r.JSON(t, &res)
	if res.ID != 7 || res.Error.Code != -32601 {
		t.Errorf("ListTasks: %d %s", r.Status, r.Body)
	}
}
