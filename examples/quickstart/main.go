// Command quickstart runs one turn of the support network as a Go program:
// the file's agents, tools, policy and picker, with real providers (this
// network runs on the scripted model, so it needs no API key; set
// BATON_MODEL=ollama:llama3.2, openai:gpt-4.1-mini, … to run it on a live
// model). Run it from the repository's root: go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/service"
)

func main() {
	spec, err := service.Load("examples/support/network.yaml", service.LoadOptions{Model: os.Getenv("BATON_MODEL")})
	if err != nil {
		log.Fatal(err)
	}
	defer spec.Close()

	r, err := runner.New(spec.RunnerConfig())
	if err != nil {
		log.Fatal(err)
	}
	res, err := r.Run(context.Background(), "I was charged twice for order 1234")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s, %s after %d transfer(s):\n%s\n", res.LastAgent, res.Status, res.Transfers, res.Output)
}
