package protocols_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/servertest"

	"github.com/batonhq/baton/internal/runtest"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/service"
)

// stallNetwork is a network whose tool (inline, not slow) blocks its first
// call of each run until the call's context ends, and answers at once
// after: a step that outlives a shutdown's grace period.
func stallNetwork(t *testing.T) (service.Definition, *runtest.Stall) {
	t.Helper()
	s := runtest.NewStall(t, "Done thinking.")
	return service.Definition{Network: s.Network}, s
}

// TestShutdownCutsInlineRuns: runs whose step outlives Shutdown's grace
// period are cut at their last checkpoint and handed to River at once; the
// request's stream ends with a shutdown event (no error, no run_end: the
// run is not over), a request waiting for a result gets 202 with the run's
// events URL, and the run completes in the background (here, in this
// process's workers, which the test keeps running).
func TestShutdownCutsInlineRuns(t *testing.T) {
	t.Parallel()
	def, calls := stallNetwork(t)
	b := servertest.Setup(t, func(o *servertest.Options) { o.Service.Networks = append(o.Service.Networks, def) })
	streamed := b.Thread(t, b.KeyA, "stall")
	waited := b.Thread(t, b.KeyA, "stall")

	resp, ch := b.Stream(t, b.KeyA, "POST", "/v1/threads/"+streamed+"/runs", map[string]any{"input": "think", "stream": true})
	if resp.StatusCode != http.StatusOK {
		t.Fatal(resp.StatusCode)
	}
	runStreamed := resp.Header.Get("Baton-Run-Id")
	got := servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "tool_call" })
	answer := make(chan *servertest.Response, 1)
	req := b.Request(t, b.KeyA, "POST", "/v1/threads/"+waited+"/runs", map[string]any{"input": "think"})
	go func() {
		r := &servertest.Response{}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			defer resp.Body.Close()
			r.Status, r.Header = resp.StatusCode, resp.Header
			r.Body, _ = io.ReadAll(resp.Body)
		}
		answer <- r
	}()
	// An OpenAI client's stream, on a third thread.
	chatThread := b.Thread(t, b.KeyA, "stall")
	chatResp, chatCh := b.Stream(t, b.KeyA, "POST", "/v1/chat/completions", map[string]any{"model": "stall", "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": "think"}}}, server.ThreadHeader, chatThread)
	if chatResp.StatusCode != http.StatusOK {
		t.Fatal(chatResp.StatusCode)
	}
	for calls.Calls() < 3 {
		time.Sleep(10 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := b.Srv.Shutdown(ctx); err == nil {
		t.Fatal("Shutdown: nil, want the runs cut")
	}
	got = append(got, servertest.Collect(t, ch, nil)...)
	if last := got[len(got)-1]; last.Type != "shutdown" {
		t.Fatalf("the stream of a cut run ends with %q, want shutdown: %v", last.Type, servertest.Types(got))
	}
	for _, e := range got {
		if e.Type == "run_end" || e.Type == "error" {
			t.Fatalf("the stream of a cut run got %s: %v", e.Type, servertest.Types(got))
		}
	}
	// The OpenAI stream of a cut run ends with an error (the client raises
	// it), not with a finish_reason or [DONE]: its answer is not whole.
	chat := servertest.Collect(t, chatCh, nil)
	last := chat[len(chat)-1]
	if errObj, _ := last.Data["error"].(map[string]any); errObj == nil || !strings.Contains(fmt.Sprint(errObj["message"]), "shutting down") ||
		!strings.Contains(fmt.Sprint(errObj["message"]), "/events") {
		t.Fatalf("the OpenAI stream of a cut run ends with %s, want an error naming the run's events URL", last.Raw)
	}
	for _, e := range chat {
		if strings.Contains(e.Raw, "finish_reason\":\"") || e.Raw == "[DONE]" {
			t.Fatalf("the OpenAI stream of a cut run finished: %s", e.Raw)
		}
	}
	r := <-answer
	if r.Status != http.StatusAccepted || !strings.HasSuffix(r.Header.Get("Location"), "/events") {
		t.Fatalf("a request waiting for a cut run: %d (Location %q) %s, want 202 with the run's events URL", r.Status, r.Header.Get("Location"), r.Body)
	}
	var res struct{ ID string }
	r.JSON(t, &res)

	for _, run := range []struct{ thread, id string }{{streamed, runStreamed}, {waited, res.ID}} {
		servertest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() (bool, string) {
			var st struct{ Status string }
			if r := b.Do(t, b.KeyA, "GET", "/v1/threads/"+run.thread+"/runs/"+run.id, nil); r.Status == http.StatusOK {
				r.JSON(t, &st)
			}
			return st.Status == "completed", fmt.Sprintf("run %s is %q, want completed by a worker after its hand-over", run.id, st.Status)
		})
	}
}
