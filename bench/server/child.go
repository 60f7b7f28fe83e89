package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/protocols"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlitestore"
)

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

// serve is the server child: baton's server on an SQLite database in dir,
// with the quick and hold networks and the benchmark's profile and memory
// routes; it prints its address and API key, and serves until its standard
// input closes.
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
