package sse_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/sse"
)

func TestAppendEventAndReader(t *testing.T) {
	t.Parallel()
	events := []sse.Event{
		{ID: "1", Type: "text_delta", Data: []byte(`{"delta":"hi"}`)},
		{ID: "2", Data: []byte("line one\nline two\r\nline three\rend")},
		{ID: "2.1", Type: "draft", Data: []byte("")},
	}
	var b []byte
	b = append(b, ": comment\n\nretry: 1500\n\n"...)
	for _, ev := range events {
		b = sse.AppendEvent(b, ev)
	}
	rd := sse.NewReader(bytes.NewReader(b), 0)
	for i, want := range events {
		got, err := rd.Next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		wantData := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(string(want.Data))
		if got.ID != want.ID || got.Type != want.Type || string(got.Data) != wantData {
			t.Errorf("event %d = %+v (data %q), want %+v", i, got, got.Data, want)
		}
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Fatalf("end: %v, want EOF", err)
	}
	if rd.Retry != 1500*time.Millisecond {
		t.Errorf("retry = %v", rd.Retry)
	}
}

func TestReaderDropsUnterminatedEvent(t *testing.T) {
	t.Parallel()
	rd := sse.NewReader(strings.NewReader("id: 7\nevent: x\ndata: a\n\nevent: y\ndata: b"), 0)
	ev, err := rd.Next()
	if err != nil || ev.Type != "x" || ev.ID != "7" {
		t.Fatalf("first = %+v, %v", ev, err)
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Fatalf("unterminated event: %v, want EOF", err)
	}
}

// readAll reads rd's events to the end of the stream, failing t on an
// error.
func readAll(t *testing.T, rd *sse.Reader) []sse.Event {
	t.Helper()
	var evs []sse.Event
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			return evs
		}
		if err != nil {
			t.Fatalf("after %d events: %v", len(evs), err)
		}
		evs = append(evs, ev)
	}
}

func TestWriterHeadersAndEvents(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw, err := sse.NewWriter(w, sse.Options{Retry: time.Second, Header: http.Header{"X-Run": {"r1"}}})
		if err != nil {
			t.Error(err)
			return
		}
		for i := range 3 {
			if err := sw.Send(sse.Event{ID: string(rune('1' + i)), Type: "tick", Data: []byte("{}")}); err != nil {
				t.Error(err)
			}
		}
		_ = sw.Comment("ping")
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("content type %q", ct)
	}
	if resp.Header.Get("X-Run") != "r1" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("headers %v", resp.Header)
	}
	rd := sse.NewReader(resp.Body, 0)
	evs := readAll(t, rd)
	n := len(evs)
	for _, ev := range evs {
		if ev.Type != "tick" {
			t.Errorf("type %q", ev.Type)
		}
	}
	if n != 3 || rd.LastID != "3" || rd.Retry != time.Second {
		t.Errorf("n=%d last=%q retry=%v", n, rd.LastID, rd.Retry)
	}
}

func TestQueueBoundsBuffer(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	sw, err := sse.NewWriter(rec, sse.Options{MaxBuffer: 100})
	if err != nil {
		t.Fatal(err)
	}
	big := sse.Event{Data: bytes.Repeat([]byte("x"), 60)}
	if err := sw.Queue(big); err != nil {
		t.Fatalf("first: %v", err)
	}
	if err := sw.Queue(big); !errors.Is(err, sse.ErrSlowClient) {
		t.Fatalf("second: %v, want ErrSlowClient", err)
	}
	if sw.Buffered() > 100 {
		t.Fatalf("buffered %d", sw.Buffered())
	}
	if err := sw.Flush(); err != nil {
		t.Fatal(err)
	}
}

// A client that stops reading is dropped by the write deadline: the handler
// gets an error instead of blocking forever.
func TestStuckClientIsDropped(t *testing.T) {
	t.Parallel()
	done := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw, err := sse.NewWriter(w, sse.Options{WriteTimeout: 200 * time.Millisecond})
		if err != nil {
			done <- err
			return
		}
		chunk := sse.Event{Type: "x", Data: bytes.Repeat([]byte("y"), 32<<10)}
		for range 10000 { // at most 320 MiB: far more than the socket buffers
			if err := sw.Send(chunk); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// Read the headers, then stop reading.
	br := bufio.NewReader(conn)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	select {
	case err := <-done:
		if !errors.Is(err, sse.ErrClosed) {
			t.Fatalf("handler ended with %v, want ErrClosed", err)
		}
	case <-ctx.Done():
		t.Fatal("the handler is still blocked on a client that does not read")
	}
}

func TestLastEventID(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("GET", "/x?last_event_id=9", nil)
	if got := sse.LastEventID(r); got != "9" {
		t.Errorf("query: %q", got)
	}
	r.Header.Set("Last-Event-ID", " 12 ")
	if got := sse.LastEventID(r); got != "12" {
		t.Errorf("header: %q", got)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("id: 1\nevent: a\ndata: x\n\n"))
	f.Add([]byte("data: a\r\ndata: b\r\r\n: c\nretry: 10\n\n"))
	f.Add([]byte("id\x00: 2\ndata\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rd := sse.NewReader(bytes.NewReader(b), 4096)
		var evs []sse.Event
		for range 1000 {
			ev, err := rd.Next()
			if err != nil {
				break
			}
			evs = append(evs, ev)
		}
		// Whatever was read round-trips through AppendEvent.
		for _, ev := range evs {
			if strings.ContainsAny(ev.ID, "\r\n\x00") || strings.ContainsAny(ev.Type, "\r\n") {
				continue
			}
			out := sse.AppendEvent(nil, ev)
			got, err := sse.NewReader(bytes.NewReader(out), 1<<20).Next()
			if err != nil {
				t.Fatalf("re-read %q: %v", out, err)
			}
			if got.ID != ev.ID || got.Type != ev.Type || !bytes.Equal(got.Data, ev.Data) {
				t.Fatalf("round trip of %+v gave %+v", ev, got)
			}
		}
	})
}

// A hijacked stream outlives its handler: another goroutine writes its
// events, chunked, and Close ends the body cleanly; Gone sees the client
// leave. On HTTP/1.0 the body ends with the connection.
func TestHijack(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{"HTTP/1.1", "HTTP/1.0"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			handed := make(chan *sse.Writer, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sw, err := sse.NewWriter(w, sse.Options{})
				if err != nil {
					t.Error(err)
					return
				}
				if err := sw.Send(sse.Event{ID: "1", Type: "first", Data: []byte("{}")}); err != nil {
					t.Error(err)
				}
				if err := sw.Hijack(r); err != nil {
					t.Error(err)
					return
				}
				if !sw.Hijacked() {
					t.Error("not hijacked")
				}
				handed <- sw // the handler returns; the stream goes on
			}))
			defer srv.Close()
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			req, _ := http.NewRequest("GET", srv.URL, nil)
			if _, err := fmt.Fprintf(conn, "GET / %s\r\nHost: %s\r\n\r\n", proto, srv.Listener.Addr()); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, req)
			if err != nil {
				t.Fatal(err)
			}
			chunked := len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"
			if chunked != (proto == "HTTP/1.1") {
				t.Fatalf("transfer encoding %v on %s", resp.TransferEncoding, proto)
			}
			rd := sse.NewReader(resp.Body, 0)
			if ev, err := rd.Next(); err != nil || ev.Type != "first" {
				t.Fatalf("first = %+v, %v", ev, err)
			}
			sw := <-handed
			if sw.Gone() {
				t.Fatal("Gone with the client connected")
			}
			closed := make(chan struct{})
			go func() {
				defer close(closed)
				for i := range 3 {
					_ = sw.Send(sse.Event{ID: string(rune('2' + i)), Type: "later", Data: []byte("line\nline")})
				}
				_ = sw.Comment("ping")
				_ = sw.Close()
			}()
			evs := readAll(t, rd)
			n := len(evs)
			for _, ev := range evs {
				if ev.Type != "later" || string(ev.Data) != "line\nline" {
					t.Fatalf("event %+v", ev)
				}
			}
			if n != 3 || rd.LastID != "4" {
				t.Fatalf("read %d events, last id %q", n, rd.LastID)
			}
			<-closed
			if err := sw.Send(sse.Event{Data: []byte("x")}); err == nil {
				t.Fatal("Send after Close succeeded")
			}
		})
	}
	t.Run("Gone", func(t *testing.T) {
		t.Parallel()
		handed := make(chan *sse.Writer, 1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sw, _ := sse.NewWriter(w, sse.Options{})
			if err := sw.Hijack(r); err != nil {
				t.Error(err)
				return
			}
			handed <- sw
		}))
		defer srv.Close()
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		sw := <-handed
		defer sw.Close()
		if sw.Gone() {
			t.Fatal("Gone with the client connected")
		}
		resp.Body.Close() // closes the connection: the body was not read to its end
		deadline := time.Now().Add(5 * time.Second)
		for !sw.Gone() {
			if time.Now().After(deadline) {
				t.Fatal("Gone never saw the client leave")
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	t.Run("Recorder", func(t *testing.T) {
		t.Parallel()
		rec := httptest.NewRecorder()
		sw, _ := sse.NewWriter(rec, sse.Options{})
		if err := sw.Hijack(httptest.NewRequest("GET", "/", nil)); !errors.Is(err, sse.ErrNotHijackable) {
			t.Fatalf("Hijack of a recorder: %v", err)
		}
		if err := sw.Send(sse.Event{Data: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	})
}
