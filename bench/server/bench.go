package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// bench runs the server child and measures it: the TTFB overhead, then
// (with subscribers) n idle subscribers, then n streams held open.
func bench(n, batch, ttfbN, ttfbConc int, delay, hold time.Duration, dir, cpuProfile, traceFile string, subscribers bool) error {
	ctx := context.Background()
	c, tr, stop, err := startServer(n, delay, dir, cpuProfile, traceFile)
	if err != nil {
		return err
	}
	defer stop()

	// 1. TTFB overhead at low concurrency.
	if err := measureTTFB(ctx, c, ttfbN, ttfbConc, delay); err != nil {
		return err
	}

	// 2. Hold n streams open.
	t0 := time.Now()
	holdThreads, err := createThreads(ctx, c, n)
	if err != nil {
		return err
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
	return holdStreams(ctx, c, holdThreads, batch, hold, before)
}

// startServer starts this binary as the server child (-role=server) for n
// streams and returns a client of it, its transport, and stop, which ends
// the child (it serves until its standard input closes).
func startServer(n int, delay time.Duration, dir, cpuProfile, traceFile string) (c *client, tr *http.Transport, stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, nil, err
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
		return nil, nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, err
	}
	stop = func() {
		stdin.Close()
		_ = cmd.Wait()
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return nil, nil, nil, fmt.Errorf("server child: %w", err)
	}
	addr, key, _ := strings.Cut(strings.TrimSpace(line), " ")
	tr = &http.Transport{MaxIdleConns: 0, MaxIdleConnsPerHost: 256, MaxConnsPerHost: 0, DisableCompression: true}
	c = &client{base: "http://" + addr, key: key, http: &http.Client{Transport: tr}}
	fmt.Printf("server child pid %d at %s; GOMAXPROCS %d; ulimit fds ok for %d streams\n", cmd.Process.Pid, addr, runtime.GOMAXPROCS(0), n)
	return c, tr, stop, nil
}

// measureTTFB times ttfbN streamed runs on new threads, ttfbConc at a time
// after a warm-up, under the server's profile or trace if it takes one, and
// prints the time to the response headers, to the first token at the
// client, the model's own, and the overhead (client − model) per run.
func measureTTFB(ctx context.Context, c *client, ttfbN, ttfbConc int, delay time.Duration) error {
	threads := make([]string, ttfbN)
	for i := range threads {
		var err error
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
	return nil
}

// createThreads creates n threads of the network "hold", from 8 clients.
func createThreads(ctx context.Context, c *client, n int) ([]string, error) {
	holdThreads := make([]string, n)
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
		return nil, e
	}
	return holdThreads, nil
}

// holdStreams opens a streaming run on each of threads, batch at a time,
// holds them for hold once all are open, and prints how many were held
// and the server's memory per open stream against before.
func holdStreams(ctx context.Context, c *client, threads []string, batch int, hold time.Duration, before memStats) error {
	n := len(threads)
	hctx, stop := context.WithCancel(ctx)
	defer stop()
	var held, closedEarly atomic.Int64
	var openErrs atomic.Int64
	var firstErr atomic.Value
	opened := make(chan struct{}, n)
	t0 := time.Now()
	var holdFirsts []time.Duration
	var hmu sync.Mutex
	for start := 0; start < n; start += batch {
		var bw sync.WaitGroup
		for i := start; i < min(start+batch, n); i++ {
			bw.Go(func() {
				_, f, _, body, err := c.stream(hctx, threads[i])
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
	memReport("per open stream", h, before, during, &after)
	stop()
	if h < int64(n) {
		return errors.New("not every stream was held")
	}
	return nil
}

// memReport prints the server's memory before and with h streams open
// (and later, if given), and what, the memory per stream: RSS, heap,
// goroutine stacks and goroutines.
func memReport(what string, h int64, before, during memStats, later *memStats) {
	per := func(a, b uint64) string {
		if h == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f KiB", float64(int64(a)-int64(b))/float64(h)/1024)
	}
	fmt.Printf("server before: RSS %s, heap in use %s, stacks %s, goroutines %d\n", mib(before.RSS), mib(before.HeapInuse), mib(before.StackInuse), before.Goroutines)
	fmt.Printf("server open:   RSS %s, heap in use %s, stacks %s, goroutines %d\n", mib(during.RSS), mib(during.HeapInuse), mib(during.StackInuse), during.Goroutines)
	if later != nil {
		fmt.Printf("server later:  RSS %s, heap in use %s, stacks %s, goroutines %d\n", mib(later.RSS), mib(later.HeapInuse), mib(later.StackInuse), later.Goroutines)
	}
	fmt.Printf("%s: RSS %s, heap %s, stacks %s, heap+stacks %s, goroutines %.2f\n", what,
		per(during.RSS, before.RSS), per(during.HeapInuse, before.HeapInuse), per(during.StackInuse, before.StackInuse),
		per(during.HeapInuse+during.StackInuse, before.HeapInuse+before.StackInuse), float64(during.Goroutines-before.Goroutines)/float64(max(h, 1)))
}

// pct returns the p-th percentile of d, rounded to the microsecond.
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
