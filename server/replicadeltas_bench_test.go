package server_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/servertest"
	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/internal/testdb"
)

// timedEvent is an SSE event and when it was read.
type timedEvent struct {
	id, typ string
	at      time.Time
}

// timedStream reads the SSE stream of GET path on b as key, each event
// stamped as it is read, until it ends.
func timedStream(b *servertest.Bundle, key, path string) (<-chan timedEvent, func(), error) {
	req, err := http.NewRequest("GET", b.URL+path, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan timedEvent, 4096)
	go func() {
		defer close(ch)
		rd := sse.NewReader(resp.Body, 0)
		for {
			ev, err := rd.Next()
			if err != nil {
				return
			}
			ch <- timedEvent{id: ev.ID, typ: ev.Type, at: time.Now()}
		}
	}()
	return ch, func() { resp.Body.Close() }, nil
}

// BenchmarkReplicaDeltas measures what the text deltas of a run that
// executes on replica B add, in latency, to reach a client of its thread on
// replica A: two replicas on one PostgreSQL database (two services, each
// with its own pool and LISTEN connection, as two processes), a run of
// sixteen deltas 20 ms apart per iteration; each delta's arrival on A minus
// its arrival on a client of the thread on B. It reports the p50 and p99
// of that added latency (ms) and the share of the deltas A got.
//
//	BATON_TEST_DATABASE_URL=… go test ./server -run '^$' -bench ReplicaDeltas -benchtime 50x
func BenchmarkReplicaDeltas(b *testing.B) {
	url := testdb.URL(b)
	schema := testdb.Schema(b, url)
	ra := servertest.SetupStore(b, testdb.Postgres(b, url, schema), withSlow(b))
	rb := servertest.SetupStore(b, testdb.Postgres(b, url, schema), withSlow(b))
	var added []float64
	got, sent := 0, 0
	for b.Loop() {
		b.StopTimer()
		thread := ra.Thread(b, ra.KeyA, "slow")
		events := "/v1/threads/" + thread + "/events"
		onA, closeA, err := timedStream(ra, ra.KeyA, events)
		if err != nil {
			b.Fatal(err)
		}
		onB, closeB, err := timedStream(rb, ra.KeyA, events)
		if err != nil {
			b.Fatal(err)
		}
		<-onA // the snapshots
		<-onB
		time.Sleep(100 * time.Millisecond) // the interest announced
		b.StartTimer()
		if r := rb.Do(b, ra.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "talk"}); r.Status != 200 {
			b.Fatalf("run: %d %s", r.Status, r.Body)
		}
		b.StopTimer()
		read := func(ch <-chan timedEvent) map[string]time.Time {
			out := map[string]time.Time{}
			for e := range ch {
				if e.typ == "text_delta" {
					out[e.id] = e.at
				}
				if e.typ == "run_end" {
					return out
				}
			}
			return out
		}
		atB, atA := read(onB), read(onA)
		closeA()
		closeB()
		sent += len(atB)
		for id, tb := range atB {
			if ta, ok := atA[id]; ok {
				got++
				added = append(added, float64(ta.Sub(tb).Microseconds())/1000)
			}
		}
		b.StartTimer()
	}
	reportDeltas(b, "replica A", added, got, sent)
}

// reportDeltas reports the latency deltas added (ms: p50-ms, p99-ms) and
// the share of the sent deltas that reached who (got/sent); no delta at
// all fails the benchmark.
func reportDeltas(b *testing.B, who string, added []float64, got, sent int) {
	b.Helper()
	if len(added) == 0 {
		b.Fatal(who + " got no delta")
	}
	slices.Sort(added)
	b.ReportMetric(added[len(added)/2], "p50-ms")
	b.ReportMetric(added[len(added)*99/100], "p99-ms")
	b.ReportMetric(float64(got)/float64(sent), "got/sent")
}
