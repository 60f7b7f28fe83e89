package continuation

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/netspec"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/sqlitestore"
	"github.com/batonhq/baton/threads"
)

// effects is the service behind the idempotency-keyed HTTP tool: it
// applies each key's effect once and counts every call.
type effects struct {
	mu      sync.Mutex
	calls   map[string]int
	applied map[string]string // key -> run id
}

func (e *effects) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, run := r.Header.Get("Idempotency-Key"), r.Header.Get("Baton-Run-Id")
	if key == "" || run == "" || !strings.HasPrefix(key, run+":") {
		http.Error(w, "missing or malformed idempotency key", http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.calls[key]++
	if _, ok := e.applied[key]; !ok {
		e.applied[key] = run
	}
	e.mu.Unlock()
	// Slow enough for kills to land mid-call.
	time.Sleep(time.Duration(rand.IntN(250)) * time.Millisecond)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"order":"1234","status":"shipped"}`)
}

// TestWorkersKilled starts three real `baton worker` processes on one
// database, hands 200 runs to them while killing them with SIGKILL at
// random moments and restarting them, and checks that every continuation
// completed, none is stuck, and no idempotency-keyed tool call took effect
// twice (each run used one key; the service saw each key applied once).
func TestWorkersKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds baton and runs worker processes")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "baton")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/batonhq/baton/cmd/baton").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, be := range killBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			killTest(t, bin, be)
		})
	}
}

type killBackend struct {
	name string
	// url is what the workers get; open opens the test's own store on it.
	url  string
	open func(t *testing.T) store.Store
}

func killBackends(t *testing.T) []killBackend {
	path := filepath.Join(t.TempDir(), "kill.db")
	out := []killBackend{{name: "SQLite", url: "sqlite:" + path, open: func(t *testing.T) store.Store {
		s, err := sqlitestore.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}}}
	if u := os.Getenv("BATON_TEST_DATABASE_URL"); u != "" {
		schema := newSchema()
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		out = append(out, killBackend{name: "Postgres", url: u + sep + "search_path=" + schema, open: func(t *testing.T) store.Store {
			s, err := pgstore.Open(context.Background(), u, &store.Options{Schema: schema, MaxConns: 8})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_, _ = s.Pool().Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
				s.Close()
			})
			return s
		}})
	} else if os.Getenv("CI") == "true" {
		t.Fatal("BATON_TEST_DATABASE_URL is not set in CI: the PostgreSQL tests must run")
	}
	return out
}

// workerProc is one `baton worker` process slot, restarted after kills.
type workerProc struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	args []string
	log  *os.File
}

func (w *workerProc) start(t *testing.T, bin string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	cmd := exec.Command(bin, w.args...)
	cmd.Stdout, cmd.Stderr = w.log, w.log
	cmd.Env = append(os.Environ(), "BATON_LOG_LEVEL=warn")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.cmd = cmd
}

func (w *workerProc) kill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cmd != nil {
		_ = w.cmd.Process.Signal(syscall.SIGKILL)
		_ = w.cmd.Wait()
		w.cmd = nil
	}
}

func (w *workerProc) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cmd != nil {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = w.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = w.cmd.Process.Kill()
			<-done
		}
		w.cmd = nil
	}
}

func killTest(t *testing.T, bin string, be killBackend) {
	const (
		runs      = 200
		producers = 8
		nworkers  = 3
		minKills  = 12
	)
	ctx := t.Context()
	st := be.open(t) // migrates baton's tables before the workers start
	if err := driverOf(t, st).Migrate(ctx, nil); err != nil {
		t.Fatal(err)
	}
	fx := &effects{calls: map[string]int{}, applied: map[string]string{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: fx}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	yaml := filepath.Join("testdata", "kill.yaml")

	// The workers.
	dir := t.TempDir()
	procs := make([]*workerProc, nworkers)
	for i := range procs {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("worker%d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		procs[i] = &workerProc{log: f, args: []string{"worker", "--network", yaml, "--database", be.url, "--workers", "4",
			"--job-timeout", "3s", "--rescue-after", "4s", "--shutdown-timeout", "5s", "--tool", "lookup=http://" + ln.Addr().String()}}
		procs[i].start(t, bin)
	}
	defer func() {
		for _, p := range procs {
			p.stop()
		}
		if t.Failed() {
			for i := range procs {
				b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("worker%d.log", i)))
				t.Logf("worker %d log:\n%s", i, tail(string(b), 3000))
			}
		}
	}()

	// The producer: this process runs the inline turns, with the same
	// network (the tool's implementation is never called inline).
	spec, err := netspec.Load(yaml, netspec.Options{Tools: map[string]func(context.Context, json.RawMessage) (string, error){
		"lookup": func(context.Context, json.RawMessage) (string, error) { return "", fmt.Errorf("lookup ran inline") },
	}})
	if err != nil {
		t.Fatal(err)
	}
	d, br := backendOf(t, st)
	cont, svc := wire(t, st, spec.Network, Config{Store: st, Driver: d, Broker: br, NoWorkers: true, Queue: QueueName(spec.Network.Name()), Logger: testLogger()})
	// Kill and restart workers at random moments while runs come in.
	stopKilling := make(chan struct{})
	killerDone := make(chan struct{})
	var kills atomic.Int32
	go func() {
		defer close(killerDone)
		for {
			select {
			case <-stopKilling:
				return
			case <-time.After(time.Duration(200+rand.IntN(600)) * time.Millisecond):
			}
			p := procs[rand.IntN(len(procs))]
			p.kill()
			kills.Add(1)
			time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
			p.start(t, bin)
		}
	}()
	start := time.Now()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	type handed struct{ run, message string }
	out := make(chan handed, runs)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := p; i < runs; i += producers {
				var run string
				var end *runner.RunEndEvent
				for ev, err := range svc.Turn(pctx, owner, fmt.Sprintf("Where is order %d?", i), threads.TurnOptions{RunOptions: cont.RunOptions()}) {
					if err != nil {
						t.Errorf("turn %d: %v", i, err)
						return
					}
					switch e := ev.(type) {
					case *runner.RunStartEvent:
						run = e.RunID
					case *runner.RunEndEvent:
						end = e
					}
				}
				if end == nil || end.Status != "suspended" {
					t.Errorf("turn %d ended %+v", i, end)
					return
				}
				h, err := cont.Lookup(ctx, owner, run)
				if err != nil {
					t.Error(err)
					return
				}
				out <- handed{run, h.MessageID}
				time.Sleep(time.Duration(rand.IntN(100)) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	close(out)
	produced := time.Since(start)
	// Keep killing a little after the last hand-over, while the workers
	// catch up, for at least minKills kills; then let them work.
	time.Sleep(2 * time.Second)
	for t0 := time.Now(); kills.Load() < minKills && time.Since(t0) < 15*time.Second; {
		time.Sleep(100 * time.Millisecond)
	}
	close(stopKilling)
	<-killerDone
	var all []handed
	for h := range out {
		all = append(all, h)
	}
	if len(all) != runs {
		t.Fatalf("%d runs handed over, want %d", len(all), runs)
	}

	deadline := time.Now().Add(150 * time.Second)
	pending := all
	for len(pending) > 0 && time.Now().Before(deadline) {
		var still []handed
		for _, h := range pending {
			m, err := st.GetMessage(ctx, &store.GetMessageParams{OwnerID: owner, ID: h.message})
			if err != nil {
				t.Fatal(err)
			}
			switch m.Status {
			case message.StatusCompleted:
				if m.Text() != "Your order 1234 has shipped." {
					t.Errorf("run %s answered %q", h.run, m.Text())
				}
			case message.StatusError:
				t.Errorf("run %s: placeholder in error: %q", h.run, m.Text())
			default:
				still = append(still, h)
			}
		}
		pending = still
		if len(pending) > 0 {
			time.Sleep(250 * time.Millisecond)
		}
	}
	settled := time.Since(start)
	if len(pending) > 0 {
		t.Fatalf("%d of %d continuations not finished (stuck), e.g. run %s", len(pending), runs, pending[0].run)
	}
	// Every job run completed; no River job open, discarded or cancelled.
	for _, h := range all {
		jr, err := st.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: owner, IdempotencyKey: h.message})
		if err != nil || jr.Status != store.JobCompleted {
			t.Errorf("run %s: job run %+v, %v", h.run, jr, err)
		}
		if _, err := st.GetDraft(ctx, &store.GetDraftParams{OwnerID: owner, MessageID: h.message}); err == nil {
			t.Errorf("run %s: draft left", h.run)
		}
	}
	jobs := waitRiver(t, st, 30*time.Second)
	if jobs["discarded"]+jobs["cancelled"] != 0 || jobs["completed"] != runs {
		t.Errorf("river jobs = %v, want %d completed", jobs, runs)
	}
	// No tool took effect twice: one idempotency key per run, each applied
	// once by the service; re-executions (a call cut off by a kill, sent
	// again with the same key) are counted.
	fx.mu.Lock()
	defer fx.mu.Unlock()
	perRun := map[string]int{}
	calls := 0
	for key, run := range fx.applied {
		perRun[run]++
		calls += fx.calls[key]
	}
	for _, h := range all {
		if perRun[h.run] != 1 {
			t.Errorf("run %s executed its tool under %d idempotency keys", h.run, perRun[h.run])
		}
	}
	if len(fx.applied) != runs {
		t.Errorf("%d effects applied, want %d", len(fx.applied), runs)
	}
	t.Logf("%s: %d continuations, %d SIGKILLs; handed over in %s, all finished after %s; %d tool calls for %d keys (%d repeated after kills, de-duplicated by key); river %v",
		be.name, runs, kills.Load(), produced.Round(time.Millisecond), settled.Round(time.Millisecond), calls, len(fx.applied), calls-len(fx.applied), jobs)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
