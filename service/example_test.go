package service_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/threads"
)

// A library user opens the same service the baton commands use: a network
// file (with real providers, or the scripted model as here), a database,
// background workers; then runs turns on stored threads.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "baton-example")
	defer os.RemoveAll(dir)
	svc, err := service.Open(ctx, service.Config{
		Files:    []string{filepath.Join("..", "examples", "support", "network.yaml")},
		Database: "sqlite:" + filepath.Join(dir, "baton.db"),
		Workers:  2, // River workers in this process for the runs handed to the background
	})
	if err != nil {
		panic(err)
	}
	defer svc.Close()
	if err := svc.Start(ctx); err != nil {
		panic(err)
	}
	defer svc.Stop(ctx)

	support, _ := svc.Network("support")
	for ev, err := range support.Threads.Turn(ctx, "ann", "I was charged twice for order 1234", threads.TurnOptions{}) {
		if err != nil {
			panic(err)
		}
		switch e := ev.(type) {
		case *runner.TransferEvent:
			fmt.Printf("transfer %s → %s\n", e.From, e.To)
		case *runner.RunEndEvent:
			fmt.Println(e.Status, "by", e.LastAgent)
		}
	}
	// Output:
	// transfer triage → billing
	// completed by billing
}
