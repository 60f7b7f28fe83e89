// Command server is the load benchmark of `baton serve` (not a test; CI
// builds it but does not run it). It measures, on loopback, with the
// scripted model:
//
//   - TTFB overhead: the time from sending POST /v1/threads/{id}/runs
//     (stream) to the first text_delta event, minus the model's own time to
//     its first token (the scripted model yields it after -model-delay), at
//     concurrency -ttfb-concurrency, p50 and p99;
//   - streams held: -streams concurrent streaming conversations whose model
//     has sent its first token and then holds the stream open;
//   - memory per open stream: the server's RSS and Go heap with the streams
//     open, minus before, divided by the streams;
//   - memory per idle subscriber (-subscribers): -streams clients following
//     a thread's events (GET /v1/threads/{id}/events) on threads with no
//     run, each one's first event (the thread snapshot) read, measured the
//     same way; closed before the runs are held.
//
// The server runs in a child process (this binary with -role=server), so
// that its RSS is its own and each process stays under the file descriptor
// limit (one socket per stream on each side). run.sh raises `ulimit -n`
// and records the command in bench/RESULTS.md's Server section.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/protocols"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlitestore"
)

func main() {
	role := flag.String("role", "client", "client (the benchmark) or server (the child process)")
	streams := flag.Int("streams", 10000, "concurrent streaming conversations to hold open")
	batch := flag.Int("batch", 100, "streams opened at once")
	ttfbN := flag.Int("ttfb", 2000, "runs timed for the TTFB overhead")
	ttfbConc := flag.Int("ttfb-concurrency", 1, "concurrency of the TTFB runs")
	modelDelay := flag.Duration("model-delay", 20*time.Millisecond, "the scripted model's time to its first token")
	hold := flag.Duration("hold", 30*time.Second, "how long the streams are held open once all are open")
	subscribers := flag.Bool("subscribers", true, "before the held runs, measure idle subscribers: -streams GET /v1/threads/{id}/events streams on threads with no run")
	dir := flag.String("dir", "", "directory of the server's SQLite database (default: a temporary directory)")
	cpuProfile := flag.String("cpuprofile", "", "write the server's CPU profile of the TTFB phase to this file")
	traceFile := flag.String("trace", "", "write the server's execution trace of the TTFB phase to this file (go tool trace; -pprof=syscall shows the fsyncs)")
	flag.Parse()
	var err error
	if *role == "server" {
		err = serve(*dir, *modelDelay, *streams, *cpuProfile, *traceFile)
	} else {
		err = bench(*streams, *batch, *ttfbN, *ttfbConc, *modelDelay, *hold, *dir, *cpuProfile, *traceFile, *subscribers)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/server:", err)
		os.Exit(1)
	}
}

// ---- server (child) -------------------------------------------------

// network returns a one-agent network whose scripted model waits delay,
// streams its first word, and then waits gap between words. The first
// word is stamped with the model's own time to it ("t<nanoseconds> "), so
// that the client subtracts exactly what the model took.
func network(name string, delay, gap time.Duration) (*agent.Network, error) {
	words := "first second third fourth fifth sixth"
	m := stamped{scripted.New("holder", []scripted.Step{{Text: words, Delay: delay}}, scripted.Options{ChunkWords: 1, ChunkDelay: gap})}
	return agent.NewNetwork(agent.NetworkConfig{Name: name, Agents: []*agent.Agent{{Name: "holder", Model: m, ModelName: "scripted"}}})
}

// stamped prefixes a model's first text delta with the model's time to it.
type stamped struct{ inner model.Model }

func (m stamped) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		start := time.Now()
		first := true
		for c, err := range m.inner.Stream(ctx, req) {
			if first && err == nil && c.Type == model.ChunkText {
				c.Text = "t" + strconv.FormatInt(time.Since(start).Nanoseconds(), 10) + " " + c.Text
				first = false
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

func serve(dir string, delay time.Duration, streams int, cpuProfile, traceFile string) error {
	ctx := context.Background()
	if dir == "" {
		d, err := os.MkdirTemp("", "baton-bench-server-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	st, err := sqlitestore.Open(ctx, filepath.Join(dir, "bench.db"), nil)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: "bench"}); err != nil {
		return err
	}
	key, err := st.CreateAPIKey(ctx, &store.CreateAPIKeyParams{OwnerID: "bench"})
	if err != nil {
		return err
	}
	quick, err := network("quick", delay, 0)
	if err != nil {
		return err
	}
	holdNet, err := network("hold", 0, time.Hour)
	if err != nil {
		return err
	}
	svc, err := service.Open(ctx, service.Config{Store: st, Networks: []service.Definition{{Network: quick}, {Network: holdNet}}, Workers: 4, Adopt: true})
	if err != nil {
		return err
	}
	if err := svc.Start(ctx); err != nil {
		return err
	}
	defer svc.Stop(ctx)
	srv, err := server.New(server.Config{
		Service: svc, Logger: slog.New(slog.DiscardHandler), MaxStreams: streams + 1000, NoUI: true,
		Heartbeat: 30 * time.Second, KeyCacheTTL: time.Minute, Protocols: protocols.All(),
	})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/", srv)
	mux.HandleFunc("POST /bench/profile", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("stop") != "" {
			if cpuProfile != "" {
				pprof.StopCPUProfile()
			}
			if traceFile != "" {
				trace.Stop()
			}
			return
		}
		var err error
		if cpuProfile != "" {
			var f *os.File
			if f, err = os.Create(cpuProfile); err == nil {
				err = pprof.StartCPUProfile(f)
			}
		}
		if traceFile != "" && err == nil {
			var f *os.File
			if f, err = os.Create(traceFile); err == nil {
				err = trace.Start(f)
			}
		}
		if err != nil {
			http.Error(w, err.Error(), 500)
		}
	})
	mux.HandleFunc("GET /bench/mem", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("gc") {
			runtime.GC()
			debug.FreeOSMemory()
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		_ = json.NewEncoder(w).Encode(map[string]uint64{
			"rss": rss(), "heap_inuse": ms.HeapInuse, "stack_inuse": ms.StackInuse, "sys": ms.Sys,
			"goroutines": uint64(runtime.NumGoroutine()),
		})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	fmt.Printf("%s %s\n", ln.Addr(), key.Secret)
	// Until the parent closes stdin.
	_, _ = io.Copy(io.Discard, os.Stdin)
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return hs.Close()
}

// rss returns the process's resident set size in bytes.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// ---- client ---------------------------------------------------------

type client struct {
	base string
	key  string
	http *http.Client
}

func (c *client) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	data, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, strings.NewReader(string(data)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	return c.http.Do(req)
}

func (c *client) thread(ctx context.Context, network string) (string, error) {
	resp, err := c.do(ctx, "POST", "/v1/threads", map[string]string{"network": network})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var th struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&th); err != nil || resp.StatusCode != 201 {
		return "", fmt.Errorf("create thread: %d %v", resp.StatusCode, err)
	}
	return th.ID, nil
}

// stream starts a streaming run and returns when its first text_delta
// arrives, with the time to the response headers, to that event, and the
// model's own time to its first token; the body stays open for the caller.
func (c *client) stream(ctx context.Context, thread string) (headers, first, modelFirst time.Duration, body io.ReadCloser, err error) {
	start := time.Now()
	resp, err := c.do(ctx, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "hold on", "stream": true})
	if err != nil {
		return 0, 0, 0, nil, err
	}
	headers = time.Since(start)
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return 0, 0, 0, nil, fmt.Errorf("run: %d %s", resp.StatusCode, b)
	}
	rd := sse.NewReader(resp.Body, 0)
	for {
		ev, err := rd.Next()
		if err != nil {
			resp.Body.Close()
			return 0, 0, 0, nil, fmt.Errorf("stream ended before the first token: %w", err)
		}
		if ev.Type == "text_delta" {
			first = time.Since(start)
			var d struct{ Delta string }
			_ = json.Unmarshal(ev.Data, &d)
			if ns, _, ok := strings.Cut(strings.TrimPrefix(d.Delta, "t"), " "); ok {
				n, _ := strconv.ParseInt(ns, 10, 64)
				modelFirst = time.Duration(n)
			}
			return headers, first, modelFirst, resp.Body, nil
		}
	}
}

type memStats struct {
	RSS        uint64 `json:"rss"`
	HeapInuse  uint64 `json:"heap_inuse"`
	StackInuse uint64 `json:"stack_inuse"`
	Sys        uint64 `json:"sys"`
	Goroutines uint64 `json:"goroutines"`
}

func (c *client) mem(ctx context.Context, gc bool) (memStats, error) {
	q := ""
	if gc {
		q = "?gc=1"
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", c.base+"/bench/mem"+q, nil)
	resp, err := c.http.Do(req)
	if err != nil {
		return memStats{}, err
	}
	defer resp.Body.Close()
	var m memStats
	return m, json.NewDecoder(resp.Body).Decode(&m)
}

func bench(n, batch, ttfbN, ttfbConc int, delay, hold time.Duration, dir, cpuProfile, traceFile string, subscribers bool) error {
	ctx := context.Background()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"-role=server", "-model-delay=" + delay.String(), "-streams=" + strconv.Itoa(n)}
	if dir != "" {
		args = append(args, "-dir="+dir)
	}
	if cpuProfile != "" {
		args = append(args, "-cpuprofile="+cpuProfile)
	}
	if traceFile != "" {
		args = append(args, "-trace="+traceFile)
	}
	cmd := exec.Command(self, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("server child: %w", err)
	}
	addr, key, _ := strings.Cut(strings.TrimSpace(line), " ")
	tr := &http.Transport{MaxIdleConns: 0, MaxIdleConnsPerHost: 256, MaxConnsPerHost: 0, DisableCompression: true}
	c := &client{base: "http://" + addr, key: key, http: &http.Client{Transport: tr}}
	fmt.Printf("server child pid %d at %s; GOMAXPROCS %d; ulimit fds ok for %d streams\n", cmd.Process.Pid, addr, runtime.GOMAXPROCS(0), n)

	// 1. TTFB overhead at low concurrency.
	threads := make([]string, ttfbN)
	for i := range threads {
		if threads[i], err = c.thread(ctx, "quick"); err != nil {
			return err
		}
	}
	// Warm up: connections, caches, the first statements.
	for i := 0; i < min(50, ttfbN); i++ {
		th, err := c.thread(ctx, "quick")
		if err != nil {
			return err
		}
		if _, _, _, body, err := c.stream(ctx, th); err == nil {
			_, _ = io.Copy(io.Discard, body)
			body.Close()
		}
	}
	if resp, err := c.do(ctx, "POST", "/bench/profile", nil); err == nil {
		resp.Body.Close()
	}
	var hdrs, firsts, overhead, models []time.Duration
	var mu sync.Mutex
	var next atomic.Int64
	var wg sync.WaitGroup
	var ttfbErr atomic.Value
	for range ttfbConc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= ttfbN {
					return
				}
				h, f, m, body, err := c.stream(ctx, threads[i])
				if err != nil {
					ttfbErr.Store(err)
					return
				}
				_, _ = io.Copy(io.Discard, body) // let the run finish
				body.Close()
				mu.Lock()
				hdrs, firsts = append(hdrs, h), append(firsts, f)
				overhead, models = append(overhead, f-m), append(models, m)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if resp, err := c.do(ctx, "POST", "/bench/profile?stop=1", nil); err == nil {
		resp.Body.Close()
	}
	if e, ok := ttfbErr.Load().(error); ok {
		return e
	}
	fmt.Printf("\nTTFB (%d runs, concurrency %d, model asked to take %s to its first token):\n", len(firsts), ttfbConc, delay)
	fmt.Printf("  response headers        p50 %9s  p99 %9s\n", pct(hdrs, 50), pct(hdrs, 99))
	fmt.Printf("  first token at client   p50 %9s  p99 %9s\n", pct(firsts, 50), pct(firsts, 99))
	fmt.Printf("  model's own first token p50 %9s  p99 %9s\n", pct(models, 50), pct(models, 99))
	fmt.Printf("  overhead (client - model, per run) p50 %9s  p99 %9s\n", pct(overhead, 50), pct(overhead, 99))

	// 2. Hold n streams open.
	holdThreads := make([]string, n)
	t0 := time.Now()
	var tw sync.WaitGroup
	var tnext atomic.Int64
	var terr atomic.Value
	for range 8 {
		tw.Go(func() {
			for {
				i := int(tnext.Add(1)) - 1
				if i >= n {
					return
				}
				th, err := c.thread(ctx, "hold")
				if err != nil {
					terr.Store(err)
					return
				}
				holdThreads[i] = th
			}
		})
	}
	tw.Wait()
	if e, ok := terr.Load().(error); ok {
		return e
	}
	fmt.Printf("\ncreated %d threads in %s\n", n, time.Since(t0).Round(time.Millisecond))
	tr.CloseIdleConnections()
	time.Sleep(500 * time.Millisecond)
	before, err := c.mem(ctx, true)
	if err != nil {
		return err
	}
	if subscribers {
		if err := c.subscribe(ctx, holdThreads, batch); err != nil {
			return err
		}
		tr.CloseIdleConnections()
		time.Sleep(2 * time.Second)
		if before, err = c.mem(ctx, true); err != nil {
			return err
		}
	}
	hctx, stop := context.WithCancel(ctx)
	defer stop()
	var held, closedEarly atomic.Int64
	var openErrs atomic.Int64
	var firstErr atomic.Value
	opened := make(chan struct{}, n)
	t0 = time.Now()
	var holdFirsts []time.Duration
	var hmu sync.Mutex
	for start := 0; start < n; start += batch {
		var bw sync.WaitGroup
		for i := start; i < min(start+batch, n); i++ {
			bw.Go(func() {
				_, f, _, body, err := c.stream(hctx, holdThreads[i])
				if err != nil {
					openErrs.Add(1)
					firstErr.CompareAndSwap(nil, err)
					return
				}
				hmu.Lock()
				holdFirsts = append(holdFirsts, f)
				hmu.Unlock()
				held.Add(1)
				opened <- struct{}{}
				go func() {
					_, err := io.Copy(io.Discard, body)
					if hctx.Err() == nil {
						closedEarly.Add(1)
						firstErr.CompareAndSwap(nil, fmt.Errorf("stream closed early: %v", err))
					}
					body.Close()
				}()
			})
		}
		bw.Wait()
	}
	openTime := time.Since(t0)
	fmt.Printf("opened %d streams in %s (%d failed to open)\n", held.Load(), openTime.Round(time.Millisecond), openErrs.Load())
	if e, ok := firstErr.Load().(error); ok {
		fmt.Printf("  first error: %v\n", e)
	}
	fmt.Printf("  first token while opening: p50 %s p99 %s\n", pct(holdFirsts, 50), pct(holdFirsts, 99))
	time.Sleep(2 * time.Second)
	during, err := c.mem(ctx, true)
	if err != nil {
		return err
	}
	time.Sleep(hold)
	after, err := c.mem(ctx, false)
	if err != nil {
		return err
	}
	h := held.Load() - closedEarly.Load()
	fmt.Printf("\nstreams held after %s: %d of %d (closed early: %d)\n", hold, h, n, closedEarly.Load())
	per := func(a, b uint64) string {
		if h == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f KiB", float64(int64(a)-int64(b))/float64(h)/1024)
	}
	fmt.Printf("server before: RSS %s, heap in use %s, stacks %s, goroutines %d\n", mib(before.RSS), mib(before.HeapInuse), mib(before.StackInuse), before.Goroutines)
	fmt.Printf("server open:   RSS %s, heap in use %s, stacks %s, goroutines %d\n", mib(during.RSS), mib(during.HeapInuse), mib(during.StackInuse), during.Goroutines)
	fmt.Printf("server later:  RSS %s, heap in use %s, stacks %s, goroutines %d\n", mib(after.RSS), mib(after.HeapInuse), mib(after.StackInuse), after.Goroutines)
	fmt.Printf("per open stream: RSS %s, heap %s, stacks %s, heap+stacks %s, goroutines %.2f\n",
		per(during.RSS, before.RSS), per(during.HeapInuse, before.HeapInuse), per(during.StackInuse, before.StackInuse),
		per(during.HeapInuse+during.StackInuse, before.HeapInuse+before.StackInuse), float64(during.Goroutines-before.Goroutines)/float64(max(h, 1)))
	stop()
	if h < int64(n) {
		return errors.New("not every stream was held")
	}
	return nil
}

// subscribe opens a thread event stream on each of threads, reads its first
// event, reports the server's memory per open stream, and closes them.
func (c *client) subscribe(ctx context.Context, threads []string, batch int) error {
	before, err := c.mem(ctx, true)
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	var open atomic.Int64
	var firstErr atomic.Value
	firsts := make([]time.Duration, len(threads))
	t0 := time.Now()
	for start := 0; start < len(threads); start += batch {
		var bw sync.WaitGroup
		for i := start; i < min(start+batch, len(threads)); i++ {
			bw.Go(func() {
				began := time.Now()
				resp, err := c.do(sctx, "GET", "/v1/threads/"+threads[i]+"/events", nil)
				if err == nil && resp.StatusCode != http.StatusOK {
					resp.Body.Close()
					err = fmt.Errorf("GET events: %s", resp.Status)
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				rd := sse.NewReader(resp.Body, 0)
				if _, err := rd.Next(); err != nil {
					resp.Body.Close()
					firstErr.CompareAndSwap(nil, fmt.Errorf("first event: %w", err))
					return
				}
				firsts[i] = time.Since(began)
				open.Add(1)
				go func() {
					<-sctx.Done()
					resp.Body.Close()
				}()
			})
		}
		bw.Wait()
	}
	fmt.Printf("\nopened %d idle subscribers (GET /v1/threads/{id}/events, no run) in %s\n", open.Load(), time.Since(t0).Round(time.Millisecond))
	if e, ok := firstErr.Load().(error); ok {
		return e
	}
	fmt.Printf("  first event (the snapshot): p50 %s p99 %s\n", pct(firsts, 50), pct(firsts, 99))
	time.Sleep(2 * time.Second)
	during, err := c.mem(ctx, true)
	if err != nil {
		return err
	}
	h := open.Load()
	per := func(a, b uint64) string { return fmt.Sprintf("%.1f KiB", float64(int64(a)-int64(b))/float64(h)/1024) }
	fmt.Printf("server before: RSS %s, heap in use %s, stacks %s, goroutines %d\n", mib(before.RSS), mib(before.HeapInuse), mib(before.StackInuse), before.Goroutines)
	fmt.Printf("server open:   RSS %s, heap in use %s, stacks %s, goroutines %d\n", mib(during.RSS), mib(during.HeapInuse), mib(during.StackInuse), during.Goroutines)
	fmt.Printf("per idle subscriber: RSS %s, heap %s, stacks %s, heap+stacks %s, goroutines %.2f\n",
		per(during.RSS, before.RSS), per(during.HeapInuse, before.HeapInuse), per(during.StackInuse, before.StackInuse),
		per(during.HeapInuse+during.StackInuse, before.HeapInuse+before.StackInuse), float64(during.Goroutines-before.Goroutines)/float64(max(h, 1)))
	return nil
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(0, min(i-1, len(s)-1))].Round(time.Microsecond)
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
