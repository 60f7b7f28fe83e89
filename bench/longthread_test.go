package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"iter"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// longTurns is how many turns BenchmarkLongThread runs on its thread:
// 1 000, or BATON_LONG_TURNS for a shorter trial (at least 10; the marks
// past it are not reported).
var longTurns = 1000

func init() {
	if n, err := strconv.Atoi(os.Getenv("BATON_LONG_TURNS")); err == nil && n >= 10 {
		longTurns = n
	}
}

// longMarks are the turns whose figures BenchmarkLongThread reports: each
// the median of the turns of its window (the turn itself for turn 1).
var longMarks = []struct{ turn, from int }{{1, 1}, {10, 6}, {100, 91}, {1000, 991}}

// longModel is a scripted support agent: a user's message gets a call of
// lookup with the order number the message names, the tool's result an
// answer quoting it. Every turn is alike, whatever the thread's length.
func longModel() model.Model {
	return model.Func(func(_ context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
		last := req.Messages[len(req.Messages)-1]
		n := len(req.Messages)
		var msg message.Message
		if last.Role == message.RoleUser {
			order := strings.TrimPrefix(last.Text(), "Where is my order ")
			msg = message.Message{Role: message.RoleAssistant, Agent: "support", Parts: []message.Part{{Type: message.PartToolCall,
				CallID: "call_" + strconv.Itoa(n), Name: "lookup", Arguments: json.RawMessage(`{"order":"` + order + `"}`)}}}
		} else {
			msg = message.Message{Role: message.RoleAssistant, Agent: "support", Parts: []message.Part{{Type: message.PartText,
				Text: "Your order shipped yesterday from our Lyon warehouse and should arrive within two working days; " + last.Text()}}}
		}
		finish := "stop"
		if msg.HasToolCalls() {
			finish = "tool_calls"
		}
		return func(yield func(model.Chunk, error) bool) {
			if t := msg.Text(); t != "" && !yield(model.Chunk{Type: model.ChunkText, Text: t}, nil) {
				return
			}
			for _, p := range msg.Parts {
				if p.Type == message.PartToolCall && !yield(model.Chunk{Type: model.ChunkToolCall, ToolCall: &message.ToolCall{ID: p.CallID, Name: p.Name, Arguments: p.Arguments}}, nil) {
					return
				}
			}
			yield(model.Chunk{Type: model.ChunkDone, Message: &msg, Usage: usage, FinishReason: finish, Model: "scripted"}, nil)
		}
	})
}

// longRunner is the runner of BenchmarkLongThread's network: one agent,
// one tool.
func longRunner(tb testing.TB) *runner.Runner {
	tb.Helper()
	lookup := &agent.Tool{Name: "lookup", Func: func(_ context.Context, args json.RawMessage) (string, error) {
		return `{"status":"shipped","carrier":"colissimo","tracking":"6A123456789","args":` + string(args) + `}`, nil
	}}
	net, err := agent.NewNetwork(agent.NetworkConfig{Name: "long", Agents: []*agent.Agent{{Name: "support", Model: longModel(), Tools: []*agent.Tool{lookup}}}})
	if err != nil {
		tb.Fatal(err)
	}
	r, err := runner.New(runner.Config{Network: net, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// storedBytes reads what a thread holds: its checkpoints' count and state
// bytes, and its messages' bytes (parts, usage, metadata).
func storedBytes(tb testing.TB, ctx context.Context, st store.Store, threadID string) (checkpoints, cpBytes, msgBytes int64) {
	tb.Helper()
	const cpQ = `SELECT count(*), coalesce(sum(length(state)), 0) FROM checkpoints WHERE thread_id = $1`
	var err error
	switch s := st.(type) {
	case interface{ DB() *sql.DB }:
		if err = s.DB().QueryRowContext(ctx, cpQ, threadID).Scan(&checkpoints, &cpBytes); err == nil {
			err = s.DB().QueryRowContext(ctx, `SELECT coalesce(sum(length(CAST(parts AS BLOB)) + coalesce(length(CAST(usage AS BLOB)), 0)
				+ length(CAST(metadata AS BLOB))), 0) FROM messages WHERE thread_id = $1`, threadID).Scan(&msgBytes)
		}
	case interface{ Pool() *pgxpool.Pool }:
		if err = s.Pool().QueryRow(ctx, `SELECT count(*), coalesce(sum(octet_length(state)), 0) FROM checkpoints WHERE thread_id = $1`, threadID).Scan(&checkpoints, &cpBytes); err == nil {
			err = s.Pool().QueryRow(ctx, `SELECT coalesce(sum(octet_length(parts::text) + coalesce(octet_length(usage::text), 0)
				+ octet_length(metadata::text)), 0) FROM messages WHERE thread_id = $1`, threadID).Scan(&msgBytes)
		}
	default:
		tb.Fatalf("store %T: no database to measure", st)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return checkpoints, cpBytes, msgBytes
}

// turnFigures are one turn's: its checkpoints, the state bytes they wrote,
// its wall time and its checkpoints' (their transactions').
type turnFigures struct {
	steps, bytes int64
	d, steptime  time.Duration
}

// timedStore times the transactions of a store: the threads checkpointer
// writes each step's checkpoint in one.
type timedStore struct {
	store.Store
	d time.Duration
}

func (s *timedStore) Tx(ctx context.Context, fn func(tx store.Tx) error) error {
	start := time.Now()
	err := s.Store.Tx(ctx, fn)
	s.d += time.Since(start)
	return err
}

// BenchmarkLongThread runs one thread to 1 000 turns (a scripted agent:
// each turn a tool call, its result and an answer) on SQLite and
// PostgreSQL, and reports, at turns 1, 10, 100 and 1 000 (the median of
// the turns 1, 6–10, 91–100, 991–1 000), the checkpoint bytes written per
// step (B/step@N), a step's latency (its checkpoint's transaction,
// µs/step@N) and the turn's (µs/turn@N); then the thread's checkpoint bytes over its
// messages' bytes (cp/msg). Run it with -benchtime 1x: one iteration is
// the whole thread.
func BenchmarkLongThread(b *testing.B) {
	for name, open := range testdb.Backends(b) {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				b.StopTimer()
				st := open(b)
				ts := &timedStore{Store: st}
				svc := threads.New(ts, longRunner(b), slog.New(slog.DiscardHandler))
				b.StartTimer()
				figs, cpBytes, msgBytes := longThread(b, ctx, st, ts, svc)
				b.StopTimer()
				for _, m := range longMarks {
					if m.turn > longTurns {
						continue
					}
					var steps, turns, bytes []float64
					for _, f := range figs[m.from-1 : m.turn] {
						steps = append(steps, float64(f.steptime.Microseconds())/float64(f.steps))
						turns = append(turns, float64(f.d.Microseconds()))
						bytes = append(bytes, float64(f.bytes)/float64(f.steps))
					}
					b.ReportMetric(median(bytes), "B/step@"+strconv.Itoa(m.turn))
					b.ReportMetric(median(steps), "µs/step@"+strconv.Itoa(m.turn))
					b.ReportMetric(median(turns), "µs/turn@"+strconv.Itoa(m.turn))
				}
				b.ReportMetric(float64(cpBytes)/float64(msgBytes), "cp/msg")
				b.ReportMetric(float64(cpBytes), "cp-bytes")
				b.ReportMetric(float64(msgBytes), "msg-bytes")
				b.StartTimer()
			}
		})
	}
}

// longThread runs longTurns turns on one thread and returns each turn's
// figures and the thread's checkpoint and message bytes at the end.
func longThread(b *testing.B, ctx context.Context, st store.Store, ts *timedStore, svc *threads.Service) ([]turnFigures, int64, int64) {
	const owner = "bench"
	threadID := ""
	figs := make([]turnFigures, 0, longTurns)
	var prevN, prevB int64
	for turn := 1; turn <= longTurns; turn++ {
		start, tx0 := time.Now(), ts.d
		for ev, err := range svc.Turn(ctx, owner, "Where is my order "+strconv.Itoa(turn), threads.TurnOptions{ThreadID: threadID}) {
			if err != nil {
				b.Fatalf("turn %d: %v", turn, err)
			}
			if e, ok := ev.(*runner.RunStartEvent); ok {
				threadID = e.ThreadID
			}
			if e, ok := ev.(*runner.RunEndEvent); ok && e.Status != "completed" {
				b.Fatalf("turn %d ended %s", turn, e.Status)
			}
		}
		d := time.Since(start)
		b.StopTimer()
		n, bytes, _ := storedBytes(b, ctx, st, threadID)
		figs = append(figs, turnFigures{steps: n - prevN, bytes: bytes - prevB, d: d, steptime: ts.d - tx0})
		prevN, prevB = n, bytes
		b.StartTimer()
	}
	_, cpBytes, msgBytes := storedBytes(b, ctx, st, threadID)
	return figs, cpBytes, msgBytes
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
