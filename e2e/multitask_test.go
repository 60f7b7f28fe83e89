package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
)

// enqueueSurvivesKill is TestEnqueueSurvivesKill on a backend.
func enqueueSurvivesKill(t *testing.T, be backend) {
	t.Parallel()
	db := be.open(t)
	c := startCluster(t, db, newEffects(t, nil), clusterConfig{serveWorkers: 2, flags: []string{
		"--lease-ttl", leaseTTL.String(), "--job-timeout", jobTimeout.String()}})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	thread, err := c.api.createThread(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The busy run: streaming its first answer when serve dies.
	busy := make(chan string, 1)
	go func() {
		run, _, _ := c.api.stream(ctx, thread, paths["inline"][0], nil, func(ev runner.Event) bool {
			_, ok := ev.(*runner.TextDeltaEvent)
			return ok
		})
		busy <- run
	}()
	first := receive(t, ctx, busy, "the first run did not stream")
	var queued struct {
		ID, Status string
		Position   int
	}
	if err := c.api.do(ctx, http.MethodPost, "/v1/threads/"+thread+"/runs",
		map[string]any{"input": paths["inline"][1], "multitask_strategy": "enqueue"}, &queued); err != nil {
		t.Fatal(err)
	}
	if queued.Status != "queued" || queued.Position != 1 {
		t.Fatalf("enqueued: %+v", queued)
	}
	c.serve.kill()
	if err := c.serve.start(); err != nil {
		t.Fatal(err)
	}
	var r1, r2 *runResult
	var err1, err2 error
	waitUntil(ctx, t, recoveryBound(), 250*time.Millisecond, func() bool {
		r1, err1 = c.api.run(ctx, thread, first)
		r2, err2 = c.api.run(ctx, thread, queued.ID)
		return err1 == nil && err2 == nil && r1.Status == "completed" && r2.Status == "completed"
	}, func() string {
		return fmt.Sprintf("after the kill: first %+v (%v), queued %+v (%v)", r1, err1, r2, err2)
	})
	// In order: the first turn's input and answer, then the queued
	// one's; no run left running, the queue empty.
	msgs, _ := db.messages(t, thread)
	var users []string
	for _, m := range msgs {
		if m.Role == message.RoleUser {
			users = append(users, m.Text())
		}
	}
	if strings.Join(users, "|") != paths["inline"][0]+"|"+paths["inline"][1] || msgs[len(msgs)-1].Role != message.RoleAssistant {
		t.Fatalf("thread after the kill: users %q, last %s", users, msgs[len(msgs)-1].Role)
	}
	if n := db.count(t, `SELECT count(*) FROM threads WHERE CAST(metadata AS TEXT) LIKE '%"queue"%'`); n != 0 {
		t.Fatalf("%d threads still have a queue", n)
	}
}

// TestEnqueueSurvivesKill: a run enqueued on a busy thread
// (multitask_strategy enqueue) survives a SIGKILL of `baton serve`, on
// SQLite and PostgreSQL. The busy run, executed inline by the killed
// process, is adopted once its lease expires and finished by a worker of
// the restarted serve; the end of that run starts the queued one, which
// completes after it, in order.
func TestEnqueueSurvivesKill(t *testing.T) {
	batonBin(t)
	t.Parallel()
	for _, be := range backends(t, "") {
		t.Run(be.name, func(t *testing.T) { enqueueSurvivesKill(t, be) })
	}
}
