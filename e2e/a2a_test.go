package e2e_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
)

// expertsNetwork is the network the remote `baton serve` publishes over
// A2A: one agent whose answer streams a word every 250ms (about 6s).
const expertsNetwork = `version: 1
name: experts
entry: expert
agents:
  - name: expert
    description: Answers slowly, a word at a time.
    model: scripted
    stream: {chunk_words: 1, delay: 250ms}
    reply: "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty: the expert has spoken."
`

// expertAnswer is the remote expert's whole answer.
const expertAnswer = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty: the expert has spoken."

// deskNetwork is the local network: its expert is the remote one, a
// transfer target of triage and triage's agent tool (ask_expert). %s is
// the card URL, %s the reconnect window.
const deskNetwork = `version: 1
name: desk
entry: triage
limits: {max_turns: 8, timeout: 3m}
agents:
  - name: triage
    description: Sends questions to the expert.
    model: scripted
    rules:
      - when: "(?i)transfer"
        tool_calls: [{name: transfer_to_expert, arguments: {}}]
      - when: "(?i)ask"
        tool_calls: [{name: ask_expert, arguments: {input: "What do you say?"}}]
        then:
          - text: The expert answered.
    reply: Ask me to transfer you, or to ask the expert.
    transfers: [{to: expert}]
    agent_tools: [{agent: expert}]
  - name: expert
    description: The expert, served by another baton.
    remote:
      card: %s
      headers: {Authorization: "Bearer ${REMOTE_KEY}"}
      reconnect: %s
`

// a2aPair is two batons: a `baton serve` publishing the experts network
// over A2A on a fixed loopback port (so that it comes back where the local
// network's card points), and the local desk network run by `baton run`.
type a2aPair struct {
	bin, dir string
	remote   *serveProc
	remoteDB *database
	key      string
	card     string
}

func startA2APair(t *testing.T) *a2aPair {
	t.Helper()
	p := &a2aPair{bin: batonBin(t), dir: t.TempDir(), remoteDB: openSQLite(t)}
	experts := filepath.Join(p.dir, "experts.yaml")
	if err := os.WriteFile(experts, []byte(expertsNetwork), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(p.bin, "keys", "create", "--owner", owner, "--database", p.remoteDB.url).Output()
	if err != nil {
		t.Fatalf("baton keys create: %v", err)
	}
	p.key = strings.TrimSpace(string(out))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p.card = "http://" + addr + "/a2a/experts"
	p.remote = newServe(p.dir, p.bin, "--addr", addr, "--network", experts, "--database", p.remoteDB.url,
		"--lease-ttl", leaseTTL.String(), "--job-timeout", "20s", "--shutdown-timeout", "5s", "--log-level", "info")
	p.remote.name = "remote-serve"
	p.remote.logPath = filepath.Join(p.dir, "remote-serve.log")
	if err := p.remote.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.remote.stop(15 * time.Second)
		if t.Failed() {
			t.Logf("log of the remote serve:\n%s", p.remote.tail(6000))
		}
	})
	return p
}

// localRun is one `baton run --json` of the desk network and what it
// printed.
type localRun struct {
	proc *proc
	mu   sync.Mutex
	evs  []runner.Event
	// seen is told each event as it is printed.
	seen chan runner.Event
}

func (p *a2aPair) run(t *testing.T, name, reconnect, input string) *localRun {
	t.Helper()
	desk := filepath.Join(p.dir, name+".yaml")
	if err := os.WriteFile(desk, fmt.Appendf(nil, deskNetwork, p.card, reconnect), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &localRun{seen: make(chan runner.Event, 1024)}
	r.proc = newProc(p.dir, name, p.bin, "run", "--json", "--owner", owner, "--database", "sqlite:"+filepath.Join(p.dir, name+".db"), desk, input)
	r.proc.env = []string{"REMOTE_KEY=" + p.key}
	r.proc.onLine = func(line string) {
		if e, ok := decodeLine(line); ok {
			r.mu.Lock()
			r.evs = append(r.evs, e)
			r.mu.Unlock()
			select {
			case r.seen <- e:
			default:
			}
		}
	}
	if err := r.proc.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.proc.stop(5 * time.Second)
		if t.Failed() {
			t.Logf("log of %s:\n%s", name, r.proc.tail(6000))
		}
	})
	return r
}

// await waits up to d for an event that ok accepts.
func (r *localRun) await(t *testing.T, d time.Duration, what string, ok func(runner.Event) bool) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case e := <-r.seen:
			if ok(e) {
				return
			}
		case <-timeout:
			t.Fatalf("no %s after %s:\n%s", what, d, r.proc.tail(4000))
		}
	}
}

// end waits up to d for the run to exit and returns its run_end (nil if
// it printed none) and its exit error.
func (r *localRun) end(t *testing.T, d time.Duration) (*runner.RunEndEvent, error) {
	t.Helper()
	err := r.proc.wait(d)
	if err != nil && strings.Contains(err.Error(), "still running") {
		t.Fatalf("the local run hangs: %v\n%s", err, r.proc.tail(4000))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.evs {
		if end, ok := e.(*runner.RunEndEvent); ok {
			return end, err
		}
	}
	return nil, err
}

// remoteThreads counts the threads the remote baton holds: one per A2A
// context, so one per message the local network sent.
func (p *a2aPair) remoteThreads(t *testing.T) int {
	return p.remoteDB.count(t, "SELECT count(*) FROM threads")
}

// TestA2ABetweenTwoBatons: a network whose expert is an agent of another
// `baton serve` (its A2A agent card) transfers to it and asks it as a
// tool; the remote serve is SIGKILLed while it streams the answer and
// started again on the same port and database. The local run picks the
// remote task up (the task id was checkpointed) and completes with the
// whole answer, once; the remote adopted its dead run and sent nothing
// twice. A local run SIGKILLed while the remote streams is completed by
// `baton resume`, which picks the same remote task up. With the remote gone for good, the local run fails with an error
// naming the remote, within its reconnect window and retries — it never
// hangs.
func TestA2ABetweenTwoBatons(t *testing.T) {
	p := startA2APair(t)
	isExpertDelta := func(e runner.Event) bool {
		d, ok := e.(*runner.TextDeltaEvent)
		return ok && d.Agent == "expert"
	}
	threadsBefore := 0 // the remote's threads before the case that runs
	isAsk := func(e runner.Event) bool {
		c, ok := e.(*runner.ToolCallEvent)
		return ok && c.Name == "ask_expert"
	}
	for i, c := range []struct {
		name, input string
		// killAfter waits for the moment the remote is streaming.
		killAfter func(t *testing.T, r *localRun)
		// check checks what the local run printed.
		check func(t *testing.T, evs []runner.Event)
	}{
		{"transfer", "Please transfer me to the expert", func(t *testing.T, r *localRun) {
			r.await(t, time.Minute, "text_delta of the remote expert", isExpertDelta)
		}, func(t *testing.T, evs []runner.Event) {
			var text string
			deltas := 0
			for _, e := range evs {
				switch e := e.(type) {
				case *runner.TextDeltaEvent:
					if e.Agent == "expert" {
						deltas++
					}
				case *runner.MessageEvent:
					if e.Agent == "expert" {
						text += e.Text
					}
				}
			}
			if text != expertAnswer {
				t.Errorf("the expert's message is %q, want %q once", text, expertAnswer)
			}
			if deltas < 2 {
				t.Errorf("%d text deltas of the expert: its answer did not stream", deltas)
			}
		}},
		{"agent tool", "Please ask the expert", func(t *testing.T, r *localRun) {
			r.await(t, time.Minute, "ask_expert call", isAsk)
			// The remote made the context, and streams its answer (about
			// 6s) a second later.
			waitUntil(t.Context(), t, time.Minute, 20*time.Millisecond, func() bool { return p.remoteThreads(t) != threadsBefore },
				func() string { return "the remote never got the agent tool's message" })
			time.Sleep(time.Second)
		}, func(t *testing.T, evs []runner.Event) {
			var results []string
			for _, e := range evs {
				if r, ok := e.(*runner.ToolResultEvent); ok && r.Name == "ask_expert" {
					results = append(results, r.Output+r.Error)
				}
			}
			if len(results) != 1 || results[0] != expertAnswer {
				t.Errorf("ask_expert results %q, want one: %q", results, expertAnswer)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := p.remoteThreads(t)
			threadsBefore = before
			r := p.run(t, fmt.Sprintf("local-%d", i), "60s", c.input)
			c.killAfter(t, r)
			if !p.remote.kill() {
				t.Fatal("the remote serve was not running")
			}
			killed := time.Now()
			if err := p.remote.start(); err != nil {
				t.Fatal(err)
			}
			end, err := r.end(t, 2*time.Minute)
			if err != nil || end == nil || end.Status != runstate.StatusCompleted {
				t.Fatalf("local run: exit %v, run_end %+v", err, end)
			}
			t.Logf("completed %s after the kill", time.Since(killed).Round(100*time.Millisecond))
			r.mu.Lock()
			evs := append([]runner.Event(nil), r.evs...)
			r.mu.Unlock()
			c.check(t, evs)
			if n := p.remoteThreads(t) - before; n != 1 {
				t.Errorf("the remote holds %d new threads (A2A contexts), want 1: the message was sent again", n)
			}
		})
	}

	// The local process dies while the remote streams: `baton resume` picks
	// the remote task up from the checkpoint instead of sending the message
	// again.
	t.Run("local killed", func(t *testing.T) {
		before := p.remoteThreads(t)
		r := p.run(t, "local-killed", "60s", "Please transfer me to the expert")
		r.await(t, time.Minute, "text_delta of the remote expert", isExpertDelta)
		r.proc.kill()
		var runID string
		r.mu.Lock()
		for _, e := range r.evs {
			if s, ok := e.(*runner.RunStartEvent); ok {
				runID = s.RunID
			}
		}
		r.mu.Unlock()
		resume := exec.Command(p.bin, "resume", "--json", "--owner", owner, "--database", "sqlite:"+filepath.Join(p.dir, "local-killed.db"),
			filepath.Join(p.dir, "local-killed.yaml"), "--run", runID)
		resume.Env = append(os.Environ(), "REMOTE_KEY="+p.key)
		out, err := resume.CombinedOutput()
		if err != nil {
			t.Fatalf("baton resume: %v\n%s", err, out)
		}
		var text string
		var end *runner.RunEndEvent
		for line := range strings.Lines(string(out)) {
			switch e, _ := decodeLine(strings.TrimSpace(line)); e := e.(type) {
			case *runner.MessageEvent:
				if e.Agent == "expert" {
					text += e.Text
				}
			case *runner.RunEndEvent:
				end = e
			}
		}
		if end == nil || end.Status != runstate.StatusCompleted || text != expertAnswer {
			t.Fatalf("resumed run: %+v, the expert's message %q\n%s", end, text, out)
		}
		if n := p.remoteThreads(t) - before; n != 1 {
			t.Errorf("the remote holds %d new threads (A2A contexts), want 1: the resumed run sent the message again", n)
		}
	})

	// The remote thread of each run holds one answer of the expert (beside
	// the placeholder of the adopted run's hand-over): the run the kill cut
	// short was adopted, not duplicated.
	for _, th := range p.remoteDB.threads(t) {
		msgs, placeholders := p.remoteDB.messages(t, th)
		var answers []string
		for _, m := range msgs {
			if m.Role == message.RoleAssistant {
				answers = append(answers, m.Text())
			}
		}
		if len(answers) != 1 || answers[0] != expertAnswer {
			t.Errorf("remote thread %s: the expert's answers %q (and %d placeholders), want one: %q", th, answers, len(placeholders), expertAnswer)
		}
	}
	if n := p.remoteDB.count(t, "SELECT count(*) FROM messages WHERE status IN ('queued', 'streaming', 'error')"); n != 0 {
		t.Errorf("%d messages left queued, streaming or in error on the remote", n)
	}

	t.Run("remote gone", func(t *testing.T) {
		r := p.run(t, "local-gone", "3s", "Please transfer me to the expert")
		r.await(t, time.Minute, "text_delta of the remote expert", isExpertDelta)
		p.remote.kill()
		start := time.Now()
		end, err := r.end(t, 2*time.Minute)
		if err == nil {
			t.Fatalf("the local run succeeded with the remote gone: %+v", end)
		}
		if end == nil || end.Status != runstate.StatusFailed {
			t.Fatalf("local run: exit %v, run_end %+v", err, end)
		}
		r.mu.Lock()
		var why string
		for _, e := range r.evs {
			if e, ok := e.(*runner.ErrorEvent); ok {
				why = e.Message
			}
		}
		r.mu.Unlock()
		if !strings.Contains(why, "remote task") || !strings.Contains(why, "resumed") {
			t.Errorf("the run's error %q does not say the remote task could not be followed", why)
		}
		t.Logf("failed %s after the kill: %s", time.Since(start).Round(100*time.Millisecond), why)
	})
}
