package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

// deployDoc is the operators' guide whose HAProxy configuration the
// replica tests run.
const deployDoc = "../docs/deploy.md"

// fenced returns the fenced code blocks of lang in the Markdown file path.
func fenced(t testing.TB, path, lang string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var cur *strings.Builder
	for line := range strings.Lines(string(b)) {
		switch {
		case cur == nil && strings.TrimSpace(line) == "```"+lang:
			cur = &strings.Builder{}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line)
		}
	}
	return out
}

// haproxyConfig returns docs/deploy.md's HAProxy configuration with its
// bind line on the loopback port and its server lines replaced by replicas
// (their ports).
func haproxyConfig(t testing.TB, port int, replicas []int) string {
	t.Helper()
	blocks := fenced(t, deployDoc, "haproxy")
	if len(blocks) != 1 {
		t.Fatalf("%s has %d haproxy blocks, want 1", deployDoc, len(blocks))
	}
	var b strings.Builder
	binds, servers := 0, 0
	for line := range strings.Lines(blocks[0]) {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "bind":
			fmt.Fprintf(&b, "    bind 127.0.0.1:%d\n", port)
			binds++
		case len(f) > 0 && f[0] == "server":
			if servers == 0 {
				for i, p := range replicas {
					fmt.Fprintf(&b, "    server replica-%d 127.0.0.1:%d check\n", i, p)
				}
			}
			servers++
		default:
			b.WriteString(line)
		}
	}
	if binds != 1 || servers == 0 {
		t.Fatalf("%s: the haproxy block has %d bind lines and %d server lines, want 1 and some", deployDoc, binds, servers)
	}
	return b.String()
}

// balancer is HAProxy in front of the replicas, as a process slot.
type balancer struct {
	*proc
	addr string
}

// newBalancer writes HAProxy's configuration for replicas (their ports)
// behind port, and returns its slot, not started. HAProxy (Debian's
// haproxy package) must be installed: scripts/test.sh installs it; outside
// CI a test without it skips.
func newBalancer(t testing.TB, dir string, port int, replicas []int) *balancer {
	t.Helper()
	bin := haproxyBin(t)
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(haproxyConfig(t, port, replicas)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", cfg).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	return &balancer{proc: newProc(dir, "haproxy", bin, "-db", "-f", cfg), addr: fmt.Sprintf("127.0.0.1:%d", port)}
}

// url is the base URL the clients use.
func (b *balancer) url() string { return "http://" + b.addr }

// start starts HAProxy and waits until a replica answers through it.
func (b *balancer) start() error {
	if err := b.proc.start(); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(b.url() + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("haproxy: no replica answers through it after 30s (last: %v):\n%s", err, b.tail(2000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePorts returns n ports of the loopback interface free now.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var out []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

// haproxyBin returns HAProxy's path. Without it the test fails in CI
// (scripts/test.sh installs Debian's haproxy) and skips elsewhere.
func haproxyBin(t testing.TB) string {
	t.Helper()
	if bin, err := exec.LookPath("haproxy"); err == nil {
		return bin
	}
	if _, err := os.Stat("/usr/sbin/haproxy"); err == nil {
		return "/usr/sbin/haproxy"
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("haproxy is not installed (scripts/test.sh installs Debian's haproxy): the replica tests must run in CI")
	}
	t.Skip("haproxy is not installed (apt-get install haproxy); scripts/test.sh installs it")
	return ""
}

// TestDeployDocs checks docs/deploy.md: its HAProxy configuration passes
// `haproxy -c` as written, and its Kubernetes documents parse, with the
// Deployment's readiness on /readyz, liveness on /healthz, the database
// URL from a Secret, and a grace period longer than --shutdown-timeout.
func TestDeployDocs(t *testing.T) {
	t.Parallel()
	blocks := fenced(t, deployDoc, "haproxy")
	if len(blocks) != 1 {
		t.Fatalf("%d haproxy blocks, want 1", len(blocks))
	}
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(blocks[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(haproxyBin(t), "-c", "-f", cfg).CombinedOutput(); err != nil {
		t.Errorf("haproxy -c of docs/deploy.md's configuration: %v\n%s", err, out)
	}

	type probe struct {
		HTTPGet struct {
			Path string `yaml:"path"`
		} `yaml:"httpGet"`
	}
	type object struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Spec       struct {
			Replicas int `yaml:"replicas"`
			Template struct {
				Spec struct {
					Grace      int `yaml:"terminationGracePeriodSeconds"`
					Containers []struct {
						Args []string `yaml:"args"`
						Env  []struct {
							Name      string `yaml:"name"`
							ValueFrom struct {
								SecretKeyRef struct {
									Name string `yaml:"name"`
									Key  string `yaml:"key"`
								} `yaml:"secretKeyRef"`
							} `yaml:"valueFrom"`
						} `yaml:"env"`
						Readiness probe `yaml:"readinessProbe"`
						Liveness  probe `yaml:"livenessProbe"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	kinds := map[string]bool{}
	for _, block := range fenced(t, deployDoc, "yaml") {
		for i, doc := range strings.Split(block, "\n---\n") {
			var o object
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatalf("YAML document %d of docs/deploy.md: %v", i+1, err)
			}
			if o.APIVersion == "" || o.Kind == "" {
				t.Errorf("YAML document %d has no apiVersion or kind", i+1)
			}
			kinds[o.Kind] = true
			if o.Kind != "Deployment" {
				continue
			}
			spec := o.Spec.Template.Spec
			if o.Spec.Replicas < 2 || len(spec.Containers) != 1 {
				t.Fatalf("Deployment: %d replicas, %d containers", o.Spec.Replicas, len(spec.Containers))
			}
			c := spec.Containers[0]
			if c.Readiness.HTTPGet.Path != "/readyz" || c.Liveness.HTTPGet.Path != "/healthz" {
				t.Errorf("probes: readiness %q, liveness %q", c.Readiness.HTTPGet.Path, c.Liveness.HTTPGet.Path)
			}
			secret := false
			for _, e := range c.Env {
				secret = secret || e.Name == "BATON_DATABASE_URL" && e.ValueFrom.SecretKeyRef.Name != "" && e.ValueFrom.SecretKeyRef.Key != ""
			}
			if !secret {
				t.Error("the Deployment does not take BATON_DATABASE_URL from a Secret")
			}
			if len(c.Args) == 0 || c.Args[0] != "serve" {
				t.Errorf("args %q: want baton serve", c.Args)
			}
			grace := 30 * time.Second // serve's default --shutdown-timeout
			for j, a := range c.Args {
				if a == "--shutdown-timeout" && j+1 < len(c.Args) {
					d, err := time.ParseDuration(c.Args[j+1])
					if err != nil {
						t.Fatal(err)
					}
					grace = d
				}
			}
			if time.Duration(spec.Grace)*time.Second <= grace {
				t.Errorf("terminationGracePeriodSeconds %d is not above --shutdown-timeout %s", spec.Grace, grace)
			}
		}
	}
	if !kinds["Deployment"] || !kinds["Service"] {
		t.Errorf("docs/deploy.md's Kubernetes example has %v, want a Deployment and a Service", kinds)
	}
}

// TestRateLimitAcrossReplicas measures a per-key rate limit through HAProxy
// in front of three replicas, clients sending as fast as they can for 3 s:
// with --replicas 3 each replica admits a third of --rate-limit, and the
// fleet admits about the limit; without it each replica admits the whole
// limit, and the fleet about three times it (what docs/deploy.md says).
func TestRateLimitAcrossReplicas(t *testing.T) {
	batonBin(t)
	t.Parallel()
	var url string
	for _, be := range backends(t, "") {
		if be.name == "Postgres" {
			url = "pg"
			t.Run("Postgres", func(t *testing.T) {
				db := be.open(t)
				const limit, window = 20.0, 3 * time.Second
				measure := func(t *testing.T, extra ...string) (admitted, refused int, took time.Duration) {
					fx := newEffects(t, nil)
					c := startCluster(t, db, fx, clusterConfig{replicas: 3, serveFlags: append([]string{"--rate-limit", "20/s"}, extra...)})
					var mu sync.Mutex
					var wg sync.WaitGroup
					start := time.Now()
					for range 6 {
						wg.Go(func() {
							for time.Since(start) < window {
								err := c.api.do(t.Context(), http.MethodGet, "/v1/networks", nil, nil)
								var he *httpError
								mu.Lock()
								switch {
								case err == nil:
									admitted++
								case errors.As(err, &he) && he.status == http.StatusTooManyRequests:
									refused++
								default:
									t.Errorf("GET /v1/networks: %v", err)
								}
								mu.Unlock()
								if err != nil && !errors.As(err, &he) {
									return
								}
							}
						})
					}
					wg.Wait()
					took = time.Since(start)
					c.stop(t)
					return admitted, refused, took
				}
				// The fleet's budget over the window: the rate over the
				// time taken, and the bursts (20 in all with the share, 20
				// per replica without).
				shared, refusedShared, took := measure(t, "--replicas", "3")
				budget := limit*took.Seconds() + limit
				t.Logf("--rate-limit 20/s --replicas 3: %d admitted, %d refused (429) in %s; budget %.0f", shared, refusedShared, took.Round(time.Millisecond), budget)
				if float64(shared) > budget*1.1 || float64(shared) < limit*took.Seconds()*0.7 || refusedShared == 0 {
					t.Errorf("with --replicas 3 the fleet admitted %d requests in %s, want about the limit's %.0f (at most %.0f)", shared, took, limit*took.Seconds(), budget)
				}
				each, refusedEach, took2 := measure(t)
				t.Logf("--rate-limit 20/s alone: %d admitted, %d refused (429) in %s", each, refusedEach, took2.Round(time.Millisecond))
				if float64(each) < 2*limit*took2.Seconds() {
					t.Errorf("without --replicas the fleet admitted %d requests in %s, want about 3 × the limit (each replica its own)", each, took2)
				}
			})
		}
	}
	if url == "" {
		t.Skip("PostgreSQL only (replicas share a database), and no PostgreSQL URL is set")
	}
}

// TestThreadStreamAcrossReplicas: a client following a thread on one
// replica sees the runs another replica executes — two turns with tool
// calls — complete and in order, with strictly increasing ids,
// and the same events that a reader on the replica that ran them gets
// from the store; the inline run's text deltas come live with the ids
// they have on the executing replica; and the thread replayed from its
// start (?after=0) on the first replica gives every stored event. Real
// `baton serve` processes on PostgreSQL.
func TestThreadStreamAcrossReplicas(t *testing.T) {
	batonBin(t)
	t.Parallel()
	onPostgres(t, func(t *testing.T, be backend) {
		ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
		defer cancel()
		fx := newEffects(t, nil)
		c := startCluster(t, be.open(t), fx, clusterConfig{serveWorkers: 2, replicas: 2})
		a := &api{key: c.api.key, base: c.serves[0].url}
		b := &api{key: c.api.key, base: c.serves[1].url}
		thread, err := b.createThread(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The thread followed on both replicas: replica 1 executes the
		// runs, replica 0 hears of them.
		var onA, onB threadReader
		subscribed := make(chan string, 2)
		followed := make(chan error, 2)
		for _, r := range []struct {
			rd  *threadReader
			api *api
		}{{&onA, a}, {&onB, b}} {
			ends := completedEnds(2)
			go func() {
				followed <- r.rd.follow(ctx, r.api, thread, "", nil, func(e threadEvent) bool {
					if e.typ == "thread" {
						subscribed <- e.id
					}
					return ends(e)
				})
			}()
		}
		var from string
		for range 2 {
			select {
			case from = <-subscribed:
			case <-ctx.Done():
				t.Fatal("no snapshot from the streams on replicas 0 and 1")
			}
		}
		// An inline run, then one with a transfer whose slow tool is
		// handed to a worker (on either replica): its drafts and its
		// resumed run_start reach replica 0's stream too.
		var inline string
		for i, input := range []string{paths["inline"][0], paths["transfer"][0]} {
			run, evs, err := b.stream(ctx, thread, input, nil, nil)
			if err != nil || !completed(evs) {
				t.Fatalf("run %s on replica 1: %v %+v", run, err, evs)
			}
			if i == 0 {
				inline = run
			}
		}
		for range 2 {
			if err := <-followed; err != nil {
				t.Fatalf("a stream did not see both runs end: %v; replica 0 got:\n%s", err, listing(onA.events()))
			}
		}
		// The inline run's text deltas reach replica 0 live, with the ids
		// they have on replica 1, where the run executes (a batch may be
		// dropped on a loaded machine: the message carries the whole
		// text; none may differ).
		onBDeltas := map[string]string{}
		for _, e := range onB.events() {
			if e.typ == "text_delta" {
				onBDeltas[e.id] = e.raw
			}
		}
		deltas := 0
		for _, e := range onA.events() {
			if e.typ != "text_delta" || e.data["run_id"] != inline {
				continue
			}
			deltas++
			if raw, ok := onBDeltas[e.id]; !ok || raw != e.raw {
				t.Errorf("replica 0's delta %s %s is not replica 1's (%q)", e.id, e.raw, raw)
			}
		}
		if deltas == 0 {
			t.Errorf("no text delta of the inline run %s on replica 0:\n%s", inline, listing(onA.events()))
		}
		got := durable(onA.events())
		for i := 1; i < len(got); i++ {
			if !idLess(got[i-1].id, got[i].id) {
				t.Fatalf("ids not increasing on replica 0: %s then %s", got[i-1].id, got[i].id)
			}
		}
		var fromStore threadReader
		if err := fromStore.follow(ctx, b, thread, from, nil, completedEnds(2)); err != nil {
			t.Fatal(err)
		}
		want := durable(fromStore.events())
		if listing(got) != listing(want) {
			t.Errorf("replica 0 streamed:\n%s\nreplica 1's stored events after %s:\n%s", listing(got), from, listing(want))
		}
		// Replayed from the start on replica 0 (?after=0): every event of
		// the thread from its first run, no snapshot first.
		var replay threadReader
		if err := replay.follow(ctx, a, thread, "0", nil, completedEnds(2)); err != nil {
			t.Fatal(err)
		}
		if evs := replay.events(); len(evs) == 0 || evs[0].typ != "run_start" || listing(durable(evs)) != listing(want) {
			t.Errorf("replica 0 replayed from the start:\n%s\nreplica 1's stored events:\n%s", listing(durable(evs)), listing(want))
		}
		t.Logf("replica 0 streamed %d of the inline run's deltas with replica 1's ids", deltas)
		// A run handed to a worker starts again (run_start resumed):
		// count the runs.
		runs := map[any]bool{}
		for _, e := range got {
			if e.typ == "run_start" {
				runs[e.data["run_id"]] = true
			}
		}
		t.Logf("replica 0 streamed %d events of %d runs replica 1 executed", len(got), len(runs))
		if len(runs) != 2 {
			t.Errorf("run_start of %d runs on replica 0, want 2", len(runs))
		}
	})
}
