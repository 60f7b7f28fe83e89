package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/runner"
)

// proc is a process slot: one command line, started, SIGKILLed and started
// again. Its stdout and stderr go, over all its lives, to one log file.
type proc struct {
	name    string
	bin     string
	args    []string
	env     []string
	logPath string
	// onLine, if set, is told each line the process writes (stdout and
	// stderr), from os/exec's copying goroutines.
	onLine func(line string)

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // of the last life, once exited is closed
	lives  int
}

func newProc(dir, name, bin string, args ...string) *proc {
	return &proc{name: name, bin: bin, args: args, logPath: filepath.Join(dir, name+".log")}
}

// start starts a new life of the process.
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s: started twice", p.name)
	}
	log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	p.lives++
	life := p.lives
	fmt.Fprintf(log, "=== %s: life %d: %s %s\n", time.Now().Format("15:04:05.000"), life, p.name, strings.Join(p.args, " "))
	w := &lineWriter{w: log, f: p.onLine}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.Env = append(os.Environ(), p.env...)
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("%s: %w", p.name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited = cmd, exited
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(log, "=== %s: life %d ended: %v\n", time.Now().Format("15:04:05.000"), life, err)
		log.Close()
		p.mu.Lock()
		p.err = err
		if p.cmd == cmd {
			p.cmd = nil
		}
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// running reports whether a life of the process is running.
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// kill SIGKILLs the running life and waits for it to be gone; it reports
// whether one was running.
func (p *proc) kill() bool {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return false
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	return true
}

// stop ends the running life gracefully (SIGTERM), SIGKILLing it after
// grace.
func (p *proc) stop(grace time.Duration) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// wait waits up to d for the running life to exit and returns its error.
func (p *proc) wait(d time.Duration) error {
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	if exited == nil {
		return fmt.Errorf("%s: never started", p.name)
	}
	select {
	case <-exited:
	case <-time.After(d):
		return fmt.Errorf("%s: still running after %s", p.name, d)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// tail returns the last n bytes of the process's log.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		return "…" + string(b[len(b)-n:])
	}
	return string(b)
}

// lineWriter passes what a process writes to w and each complete line to f.
type lineWriter struct {
	mu  sync.Mutex
	w   *os.File
	f   func(string)
	buf []byte
}

func (l *lineWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(b)
	if l.f == nil {
		return len(b), nil
	}
	l.buf = append(l.buf, b...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := string(l.buf[:i])
		l.buf = l.buf[i+1:]
		l.f(line)
	}
}

// serveProc is the `baton serve` slot; its address changes with each life
// (--addr 127.0.0.1:0), and clients look it up again after a restart.
type serveProc struct {
	*proc
	// op is held by whoever kills or restarts the slot, so that two
	// killers never act on one replica at once.
	op   sync.Mutex
	mu   sync.Mutex
	addr string // "" while down
	up   chan struct{}
}

const listening = "baton serve: listening on "

func newServe(dir, bin string, args ...string) *serveProc {
	return newServeNamed(dir, "serve", bin, args...)
}

// newServeNamed is newServe with the slot's name (its log file's). A later
// --addr in args fixes its port.
func newServeNamed(dir, name, bin string, args ...string) *serveProc {
	s := &serveProc{proc: newProc(dir, name, bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)}
	s.onLine = func(line string) {
		if u, ok := strings.CutPrefix(line, listening); ok {
			s.mu.Lock()
			s.addr = strings.TrimSpace(u)
			select {
			case <-s.up:
			default:
				close(s.up)
			}
			s.mu.Unlock()
		}
	}
	return s
}

// start starts a life and waits until it listens.
func (s *serveProc) start() error {
	s.mu.Lock()
	s.addr, s.up = "", make(chan struct{})
	up := s.up
	s.mu.Unlock()
	if err := s.proc.start(); err != nil {
		return err
	}
	s.proc.mu.Lock()
	exited := s.exited
	s.proc.mu.Unlock()
	select {
	case <-up:
		return nil
	case <-exited:
		return fmt.Errorf("baton serve exited before it listened:\n%s", s.tail(3000))
	case <-time.After(60 * time.Second):
		return fmt.Errorf("baton serve does not listen after 60s:\n%s", s.tail(3000))
	}
}

func (s *serveProc) kill() bool {
	s.mu.Lock()
	s.addr = ""
	s.mu.Unlock()
	return s.proc.kill()
}

// url returns the base URL of the running life, "" while it is down.
func (s *serveProc) url() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// clusterConfig shapes a cluster.
type clusterConfig struct {
	// serveWorkers is `baton serve --workers` (0: none in serve).
	serveWorkers int
	// workers is how many `baton worker` processes run, with
	// workerSlots continuations each.
	workers, workerSlots int
	// flags are the background flags of serve and worker (--lease-ttl …).
	flags []string
	// replicas is how many `baton serve` processes run (0 and 1: one).
	// With two or more they listen on fixed ports behind HAProxy
	// (lb_test.go), and the clients go through it.
	replicas int
	// serveFlags are flags of serve only (--rate-limit …).
	serveFlags []string
	// env is more environment of serve and the workers (OTEL_* …).
	env []string
}

// cluster is baton on one database: a `baton serve`, `baton worker`
// processes, the tool service, and an API key.
type cluster struct {
	bin     string
	dir     string
	db      *database
	fx      *effects
	cfg     clusterConfig
	serve   *serveProc
	workers []*proc
	api     *api
	// serves are the replicas (serve is the first); lb is HAProxy in
	// front of them, nil with one replica.
	serves []*serveProc
	lb     *balancer

	mu   sync.Mutex
	clis []*proc
}

// newCluster returns baton on db without processes; its CLI processes,
// and the serve and workers of start, are stopped when the test ends (and
// their logs shown if it failed).
//
// The processes' logs go to a temporary directory, or, when BATON_E2E_LOGS
// names a directory, to a directory of the test's name in it, kept.
func newCluster(t testing.TB, db *database, fx *effects) *cluster {
	t.Helper()
	dir := t.TempDir()
	if keep := os.Getenv("BATON_E2E_LOGS"); keep != "" {
		dir = filepath.Join(keep, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := &cluster{bin: batonBin(t), dir: dir, db: db, fx: fx}
	t.Cleanup(func() { c.stop(t) })
	return c
}

// startCluster returns baton on db with an API key, a serve and workers
// shaped by cfg, running.
func startCluster(t *testing.T, db *database, fx *effects, cfg clusterConfig) *cluster {
	t.Helper()
	c := newCluster(t, db, fx)
	c.cfg = cfg
	out, err := exec.Command(c.bin, "keys", "create", "--owner", owner, "--database", db.url).Output()
	if err != nil {
		t.Fatalf("baton keys create: %v", err)
	}
	c.api = &api{key: strings.TrimSpace(string(out))}
	common := []string{"--network", network, "--database", db.url, "--shutdown-timeout", "5s"}
	args := append(append(append(append(common, "--workers", fmt.Sprint(cfg.serveWorkers), "--log-level", "info"), cfg.flags...), cfg.serveFlags...), fx.toolFlags("serve")...)
	if cfg.replicas < 2 {
		c.serve = newServe(c.dir, c.bin, args...)
		c.serve.env = cfg.env
		c.serves = []*serveProc{c.serve}
		c.api.base = c.serve.url
	} else {
		ports := freePorts(t, cfg.replicas+1)
		for i, port := range ports[1:] {
			s := newServeNamed(c.dir, fmt.Sprintf("serve-%d", i), c.bin, append(args, "--addr", fmt.Sprintf("127.0.0.1:%d", port))...)
			s.env = cfg.env
			c.serves = append(c.serves, s)
		}
		c.serve = c.serves[0]
		c.lb = newBalancer(t, c.dir, ports[0], ports[1:])
		c.api.base = c.lb.url
	}
	for i := range cfg.workers {
		name := fmt.Sprintf("worker-%d", i)
		args := append(append(append([]string{"worker"}, common...), "--workers", fmt.Sprint(cfg.workerSlots)), cfg.flags...)
		w := newProc(c.dir, name, c.bin, append(args, fx.toolFlags(name)...)...)
		w.env = append([]string{"BATON_LOG_LEVEL=info"}, cfg.env...)
		c.workers = append(c.workers, w)
	}
	if err := c.ensure(); err != nil {
		t.Fatal(err)
	}
	return c
}

// cli returns a `baton run --json` process (not started) for one turn of
// input, on thread (a new one if ""), which tells ev each event it prints.
// Its tool calls are told apart by its name.
func (c *cluster) cli(name, input, thread string, ev func(runner.Event)) *proc {
	args := []string{"run", "--json", "--owner", owner, "--database", c.db.url}
	if thread != "" {
		args = append(args, "--thread", thread)
	}
	args = append(append(args, c.fx.toolFlags(name)...), network, input)
	p := newProc(c.dir, name, c.bin, args...)
	p.onLine = func(line string) {
		if e, ok := decodeLine(line); ok {
			ev(e)
		}
	}
	c.mu.Lock()
	c.clis = append(c.clis, p)
	c.mu.Unlock()
	return p
}

// ensure starts every serve or worker slot that is down.
func (c *cluster) ensure() error {
	for _, s := range c.serves {
		if !s.running() {
			if err := s.start(); err != nil {
				return err
			}
		}
	}
	if c.lb != nil && !c.lb.running() {
		if err := c.lb.start(); err != nil {
			return err
		}
	}
	for _, w := range c.workers {
		if !w.running() {
			if err := w.start(); err != nil {
				return err
			}
		}
	}
	return nil
}

// adoptions counts the runs of dead processes adopted, from the logs.
func (c *cluster) adoptions() int {
	n := 0
	for _, p := range c.daemons() {
		b, _ := os.ReadFile(p.logPath)
		n += bytes.Count(b, []byte("adopted a run whose process died"))
	}
	return n
}

// daemons returns the serve and worker slots.
func (c *cluster) daemons() []*proc {
	var out []*proc
	for _, s := range c.serves {
		out = append(out, s.proc)
	}
	if c.lb != nil {
		out = append(out, c.lb.proc)
	}
	return append(out, c.workers...)
}

func (c *cluster) stop(t testing.TB) {
	var wg sync.WaitGroup
	c.mu.Lock()
	all := append(c.daemons(), c.clis...)
	c.mu.Unlock()
	for _, p := range all {
		wg.Go(func() { p.stop(15 * time.Second) })
	}
	wg.Wait()
	if t.Failed() {
		for _, p := range all {
			t.Logf("log of %s (%s):\n%s", p.name, p.logPath, p.tail(4000))
		}
	}
}

// runCLI runs one turn with `baton run --json` to its end and returns the
// events it printed.
func (c *cluster) runCLI(t *testing.T, name, input, thread string) []runner.Event {
	t.Helper()
	var mu sync.Mutex
	var evs []runner.Event
	p := c.cli(name, input, thread, func(e runner.Event) {
		mu.Lock()
		evs = append(evs, e)
		mu.Unlock()
	})
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(2 * time.Minute); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, p.tail(3000))
	}
	mu.Lock()
	defer mu.Unlock()
	return evs
}
