package a2a_test

import (
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/batonhq/baton/internal/servertest"
)

// BenchmarkSendMessage: one blocking send (a turn of the support network's
// triage, answered by the scripted model) over real HTTP on loopback, with
// the Go SDK's 0.3 client and with a2av1's 1.0 client: what protocol 1.0's
// conversion (internal/a2av1) costs per call.
func BenchmarkSendMessage(b *testing.B) {
	bd := servertest.Setup(b)
	for _, v := range []struct {
		name string
		tr   func(b *servertest.Bundle, network, key string) a2aclient.Transport
	}{{"0.3", a2aTransport}, {"1.0", a2aTransport1}} {
		b.Run(v.name, func(b *testing.B) {
			tr := v.tr(bd, "support", bd.KeyA)
			for b.Loop() {
				res, err := tr.SendMessage(b.Context(), &a2a.MessageSendParams{Message: userA2A("Hi there")})
				if err != nil {
					b.Fatal(err)
				}
				if task, ok := res.(*a2a.Task); !ok || task.Status.State != a2a.TaskStateCompleted {
					b.Fatalf("result %+v", res)
				}
			}
		})
	}
}
