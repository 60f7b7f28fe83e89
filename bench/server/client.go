package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/internal/sse"
)

// client is the benchmark's client of the server child: its address,
// its API key, its HTTP client.
type client struct {
	base string
	key  string
	http *http.Client
}

// do sends a request with body as JSON and the API key.
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

// thread creates a thread of network and returns its id.
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

// memStats is the server child's memory, as GET /bench/mem reports it.
type memStats struct {
	RSS        uint64 `json:"rss"`
	HeapInuse  uint64 `json:"heap_inuse"`
	StackInuse uint64 `json:"stack_inuse"`
	Sys        uint64 `json:"sys"`
	Goroutines uint64 `json:"goroutines"`
}

// mem returns the server child's memory, after a GC when gc is set.
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
	memReport("per idle subscriber", open.Load(), before, during, nil)
	return nil
}
