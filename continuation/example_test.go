package continuation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/store/sqlitestore"
	"github.com/batonhq/baton/threads"
)

// An inline turn stops before a slow tool and hands the run to a worker in
// its checkpoint's transaction; the worker resumes it and the client follows
// the placeholder message to the answer.
func Example() {
	ctx := context.Background()
	lookup := &agent.Tool{Name: "lookup_order", Slow: true, // `slow: true` in YAML
		Func: func(ctx context.Context, _ json.RawMessage) (string, error) {
			ci, _ := agent.CallFromContext(ctx) // ci.IdempotencyKey de-duplicates external effects
			_ = ci.IdempotencyKey
			return `{"status":"shipped"}`, nil
		}}
	assistant := &agent.Agent{Name: "assistant", Tools: []*agent.Tool{lookup}, Model: scripted.New("assistant", []scripted.Step{
		{ToolCalls: []scripted.Call{{Name: "lookup_order", Arguments: json.RawMessage(`{"order":"1234"}`)}}},
		{Text: "Order 1234 has shipped."},
	}, scripted.Options{})}
	net, _ := agent.NewNetwork(agent.NetworkConfig{Name: "shop", Agents: []*agent.Agent{assistant}})
	quiet := slog.New(slog.DiscardHandler)

	st, err := sqlitestore.Open(ctx, ":memory:", nil)
	if err != nil {
		panic(err)
	}
	defer st.Close()
	// River and the draft broker on the store's database (package service
	// makes these three together when it opens a database URL).
	cont, err := continuation.New(continuation.Config{Store: st, Driver: continuation.SQLiteDriver(st), Broker: draft.NewHub(st), Logger: quiet})
	if err != nil {
		panic(err)
	}
	// The runner carries the continuation's extension: it hands a run that
	// reaches a slow tool to a worker, in the checkpoint's transaction.
	r, _ := runner.New(runner.Config{Network: net, Logger: quiet, Extensions: []runner.Extension{cont.Extension()}})
	svc := threads.New(st, r, quiet)
	cont.Work(svc)
	if err := cont.Start(ctx); err != nil { // River's migrations, workers
		panic(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		cont.Stop(sctx)
	}()

	var runID string
	for ev, err := range svc.Turn(ctx, "acme", "Where is order 1234?", threads.TurnOptions{RunOptions: cont.RunOptions()}) {
		if err != nil {
			panic(err)
		}
		switch e := ev.(type) {
		case *runner.RunStartEvent:
			runID = e.RunID
		case *runner.RunEndEvent:
			fmt.Println("inline run:", e.Status)
		}
	}
	h, err := cont.Lookup(ctx, "acme", runID)
	if err != nil {
		panic(err)
	}
	sub, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for u, err := range cont.Broker().Subscribe(sub, draft.Filter{OwnerID: "acme", MessageID: h.MessageID}) {
		if err != nil {
			panic(err)
		}
		if u.Final {
			fmt.Println("placeholder:", u.Status, u.Text)
		}
	}
	// Output:
	// inline run: suspended
	// placeholder: completed Order 1234 has shipped.
}
