package hangup_test

import (
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/hangup"
)

// pair returns the two ends of a loopback TCP connection: the server's
// (accepted) and the client's.
func pair(t *testing.T) (srv, cli net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cli, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(); cli.Close() })
	return srv, cli
}

func TestWatch(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("hang-ups are watched on Linux only")
	}
	t.Parallel()
	w := hangup.New()
	fired := func(c net.Conn) (chan struct{}, func()) {
		ch := make(chan struct{}, 4)
		cancel, ok := w.Watch(c, func() { ch <- struct{}{} })
		if !ok {
			t.Fatal("Watch not supported on linux")
		}
		return ch, cancel
	}
	waitFor := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: not reported", what)
		}
	}

	t.Run("Close", func(t *testing.T) {
		srv, cli := pair(t)
		ch, cancel := fired(srv)
		defer cancel()
		select {
		case <-ch:
			t.Fatal("reported with the peer connected")
		case <-time.After(50 * time.Millisecond):
		}
		cli.Close()
		waitFor(ch, "the peer's close")
	})
	t.Run("Reset", func(t *testing.T) {
		srv, cli := pair(t)
		ch, cancel := fired(srv)
		defer cancel()
		cli.(*net.TCPConn).SetLinger(0)
		cli.Close()
		waitFor(ch, "the peer's reset")
	})
	t.Run("Cancelled", func(t *testing.T) {
		srv, cli := pair(t)
		ch, cancel := fired(srv)
		cancel()
		cancel() // twice is fine
		cli.Close()
		select {
		case <-ch:
			t.Fatal("a cancelled watch fired")
		case <-time.After(100 * time.Millisecond):
		}
	})
	t.Run("Many", func(t *testing.T) {
		const n = 200
		chs := make([]chan struct{}, n)
		clis := make([]net.Conn, n)
		for i := range n {
			srv, cli := pair(t)
			var cancel func()
			chs[i], cancel = fired(srv)
			defer cancel()
			clis[i] = cli
		}
		for i := 0; i < n; i += 2 {
			clis[i].Close()
		}
		for i := 0; i < n; i += 2 {
			waitFor(chs[i], "one of many closes")
		}
		for i := 1; i < n; i += 2 {
			select {
			case <-chs[i]:
				t.Fatalf("connection %d reported, its peer is connected", i)
			default:
			}
		}
	})
}

// A connection with no raw descriptor is not watched.
func TestWatchPipe(t *testing.T) {
	t.Parallel()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	cancel, ok := hangup.New().Watch(a, func() {})
	cancel()
	if ok {
		t.Fatal("a pipe was watched")
	}
}
