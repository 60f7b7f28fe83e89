package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/servertest"

	"github.com/batonhq/baton/server"
)

// goroutinesIn counts the goroutines whose stack has one of frames.
func goroutinesIn(frames ...string) int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		for _, f := range frames {
			if strings.Contains(g, f) {
				n++
				break
			}
		}
	}
	return n
}

// streamFrames are the frames of a goroutine serving a thread stream: its
// connection's, its handler's, its thread's watcher.
var streamFrames = []string{"net/http.(*conn).serve(", "server.(*threadStream)", "(*Server).threadEvents(", "(*Server).watchThread("}

// TestIdleThreadStreamsHoldNoGoroutine: idle thread streams (issue 19,
// item 4) hold no goroutine of their own: the connection is hijacked and
// the stream parked on its thread; a run's events wake it, and when the
// clients leave, the slots are free. Not parallel: it counts the process's
// goroutines.
func TestIdleThreadStreamsHoldNoGoroutine(t *testing.T) {
	const n = 40
	b := servertest.Setup(t, servertest.WithServer(func(c *server.Config) { c.MaxStreams = n }))
	threads := make([]string, n/4)
	for i := range threads {
		threads[i] = b.Thread(t, b.KeyA, "support")
	}
	before := goroutinesIn(streamFrames...)
	type sub struct {
		resp *http.Response
		ch   <-chan servertest.Event
	}
	subs := make([]sub, n)
	for i := range subs {
		resp, ch := b.Stream(t, b.KeyA, "GET", "/v1/threads/"+threads[i%len(threads)]+"/events", nil)
		if resp.StatusCode != 200 {
			t.Fatalf("stream %d: %d", i, resp.StatusCode)
		}
		servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "thread" })
		subs[i] = sub{resp, ch}
	}
	if r := b.Do(t, b.KeyA, "GET", "/v1/threads/"+threads[0]+"/events", nil); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("stream beyond MaxStreams: %d", r.Status)
	}
	// The streams park once they have sent their snapshot.
	var during int
	for range 100 {
		if during = goroutinesIn(streamFrames...); during <= before {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if during > before {
		t.Fatalf("%d idle streams: %d goroutines serving streams, %d before them", n, during, before)
	}
	// A run on each thread reaches each of its parked streams.
	for _, th := range threads {
		if r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+th+"/runs", map[string]any{"input": "Where is my order?"}); r.Status != 200 {
			t.Fatalf("run: %d %s", r.Status, r.Body)
		}
	}
	for i, s := range subs {
		evs := servertest.Collect(t, s.ch, func(e servertest.Event) bool { return e.Type == "run_end" })
		if last := evs[len(evs)-1]; last.Type != "run_end" || evs[0].Type != "run_start" {
			t.Fatalf("stream %d: %s", i, dump(evs))
		}
		checkThreadIDs(t, "stream", evs)
	}
	// Clients that leave free their slots at once (their hang-up is
	// watched), and nothing of them is left running.
	for _, s := range subs {
		s.resp.Body.Close()
	}
	servertest.Eventually(t, 5*time.Second, 20*time.Millisecond, func() (bool, string) {
		resp, ch := b.Stream(t, b.KeyA, "GET", "/v1/threads/"+threads[0]+"/events", nil)
		if resp.StatusCode == 200 {
			servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "thread" })
			resp.Body.Close()
			return true, ""
		}
		return false, fmt.Sprintf("slots not freed after the clients left: %d", resp.StatusCode)
	})
	for range 100 {
		if goroutinesIn("server.(*threadStream)", "(*threadWatcher).check(") == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("goroutines of closed streams left: %d", goroutinesIn("server.(*threadStream)", "(*threadWatcher).check("))
}

// rawStream opens a thread stream and returns its lines (comments
// included), until the body ends.
func rawStream(t *testing.T, client *http.Client, url, key string) (<-chan string, *http.Response) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines, resp
}

// waitLine reads lines until one satisfies ok, failing after 10 s or at
// the end of the stream.
func waitLine(t *testing.T, lines <-chan string, what string, ok func(string) bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, open := <-lines:
			if !open {
				t.Fatalf("%s: the stream ended", what)
			}
			if ok(l) {
				return
			}
		case <-timeout:
			t.Fatalf("%s: not within 10 s", what)
		}
	}
}

// TestParkedThreadStreams: a parked thread stream gets its heartbeats, a
// run's events, and at the server's drain its shutdown event — over
// HTTP/1.1 (hijacked) and HTTP/2 (the handler waits: a connection of
// HTTP/2 cannot be hijacked), on both backends.
func TestParkedThreadStreams(t *testing.T) {
	t.Parallel()
	servertest.OnBackends(t, func(t *testing.T, b *servertest.Bundle) {
		h2 := httptest.NewUnstartedServer(b.Srv)
		h2.EnableHTTP2 = true
		h2.StartTLS()
		defer h2.Close()
		c2 := h2.Client()
		c2.Transport.(*http.Transport).TLSClientConfig.NextProtos = []string{"h2"}
		thread := b.Thread(t, b.KeyA, "support")
		path := "/v1/threads/" + thread + "/events"
		type client struct {
			name  string
			lines <-chan string
			resp  *http.Response
		}
		var cs []client
		for _, c := range []struct {
			name   string
			client *http.Client
			base   string
		}{{"HTTP/1.1", http.DefaultClient, b.URL}, {"HTTP/2", c2, h2.URL}} {
			lines, resp := rawStream(t, c.client, c.base+path, b.KeyA)
			if c.name == "HTTP/2" && resp.ProtoMajor != 2 {
				t.Fatalf("HTTP/2 client spoke %s", resp.Proto)
			}
			waitLine(t, lines, c.name+": snapshot", func(l string) bool { return l == "event: thread" })
			cs = append(cs, client{c.name, lines, resp})
		}
		for _, c := range cs {
			for i := range 3 {
				waitLine(t, c.lines, c.name+": heartbeat "+string(rune('1'+i)), func(l string) bool { return l == ": ping" })
			}
		}
		if r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "Where is my order?"}); r.Status != 200 {
			t.Fatalf("run: %d %s", r.Status, r.Body)
		}
		for _, c := range cs {
			waitLine(t, c.lines, c.name+": the run's end", func(l string) bool { return l == "event: run_end" })
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Srv.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			waitLine(t, c.lines, c.name+": shutdown", func(l string) bool { return l == "event: shutdown" })
			if c.name == "HTTP/1.1" {
				for range c.lines {
				} // the body ends: the stream closed its connection
			}
			c.resp.Body.Close()
		}
	}, servertest.WithServer(func(c *server.Config) { c.Heartbeat = 100 * time.Millisecond }))
}
