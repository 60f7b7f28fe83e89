package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/servertest"
)

// TestSteps: GET /v1/threads/{id}/runs/{run_id}/steps lists a run's steps
// in order (model calls, a transfer, a tool call, the wait for an
// approval), GET …/steps/{step_id} gives a model call's request and
// answer; another owner, another thread, an unknown run or step are 404.
// SQLite and PostgreSQL.
func TestSteps(t *testing.T) {
	t.Parallel()
	servertest.Each(t, testSteps)
}

type stepList struct {
	Object, RunID, ThreadID, Status, Agent string
	CheckpointID                           string `json:"checkpoint_id"`
	Tokens                                 map[string]int64
	Data                                   []stepJSON
}

type stepJSON struct {
	ID, Object, Type, Agent, Name, Model string
	StartedAt                            string  `json:"started_at"`
	DurationMS                           float64 `json:"duration_ms"`
	CheckpointID                         string  `json:"checkpoint_id"`
	Tokens                               map[string]int64
	Ongoing                              bool
	Detail                               map[string]any
}

func testSteps(t *testing.T, b *servertest.Bundle) {
	thread, run, _ := b.Interrupted(t, b.KeyA)
	path := "/v1/threads/" + thread + "/runs/" + run + "/steps"
	r := b.Do(t, b.KeyA, "GET", path, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("steps: %d %s", r.Status, r.Body)
	}
	var list stepList
	r.JSON(t, &list)
	var got []string
	for _, s := range list.Data {
		got = append(got, s.Type+":"+s.Agent)
		if s.Object != "run.step" || s.ID == "" || s.StartedAt == "" || s.CheckpointID == "" {
			t.Errorf("step %+v", s)
		}
	}
	want := "model_call:triage transfer:triage model_call:refunds tool_call:refunds model_call:refunds approval:refunds"
	if strings.Join(got, " ") != want || list.Object != "list" || list.Status != "interrupted" || list.Tokens["input"] == 0 {
		t.Fatalf("steps %s", r.Body)
	}
	if w := list.Data[5]; !w.Ongoing || w.Name != "issue_refund" {
		t.Errorf("approval step %+v", w)
	}
	m := list.Data[0]
	if m.Model != "scripted" || m.Tokens == nil || m.Detail != nil {
		t.Errorf("model call step %+v", m)
	}
	r = b.Do(t, b.KeyA, "GET", path+"/"+m.ID, nil)
	var one stepJSON
	r.JSON(t, &one)
	req, _ := one.Detail["request"].(map[string]any)
	ans, _ := one.Detail["answer"].(map[string]any)
	if r.Status != http.StatusOK || one.ID != m.ID || req == nil || ans == nil || !strings.Contains(req["system"].(string), "first line of support") {
		t.Fatalf("step: %d %s", r.Status, r.Body)
	}
	r = b.Do(t, b.KeyA, "GET", path+"/"+list.Data[5].ID, nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "action_requests") {
		t.Fatalf("approval step: %d %s", r.Status, r.Body)
	}
	other := b.Thread(t, b.KeyA, "support")
	for _, c := range []struct{ key, path string }{
		{b.KeyB, path},
		{b.KeyB, path + "/" + m.ID},
		{b.KeyA, "/v1/threads/" + other + "/runs/" + run + "/steps"},
		{b.KeyA, "/v1/threads/" + other + "/runs/" + run + "/steps/" + m.ID},
		{b.KeyA, "/v1/threads/" + thread + "/runs/run_nope/steps"},
		{b.KeyA, path + "/nope"},
		{b.KeyA, path + "/wait_nope"},
	} {
		if r := b.Do(t, c.key, "GET", c.path, nil); r.Status != http.StatusNotFound {
			t.Errorf("GET %s: %d %s, want 404", c.path, r.Status, r.Body)
		}
	}
}
