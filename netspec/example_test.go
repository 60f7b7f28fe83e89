package netspec_test

import (
	"fmt"

	"github.com/batonhq/baton/netspec"
)

func ExampleLoad() {
	spec, err := netspec.Load("../examples/support/network.yaml", netspec.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range spec.Network.Agents() {
		fmt.Printf("%s:", a.Name)
		for _, h := range a.Transfers {
			fmt.Printf(" %s (history %s)", h.Tool(), h.Policy())
		}
		fmt.Println()
	}
	// Output:
	// triage: transfer_to_billing (history full) transfer_to_refunds (history last_user) transfer_to_tech (history full)
	// billing:
	// refunds:
	// tech:
}

func ExampleParse() {
	src := []byte(`version: 1
name: demo
agents:
  - name: triage
    model: scripted
    script: [{text: Hello!}]
    transfers: [{to: billing}]
    instuctions: Greet the customer.
`)
	_, err := netspec.Parse(src, "demo.yaml", netspec.Options{})
	fmt.Println(err)
	// Output:
	// demo.yaml:7: unknown agent "billing" (agents: triage)
	// demo.yaml:8: unknown field "instuctions" in agents[0] (did you mean "instructions"?)
}
