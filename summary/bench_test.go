package summary

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/batonhq/baton/message"
)

// BenchmarkSelectTrim measures selection and trimming of a thread with the
// defaults (last 120 scored, 25 kept, 4000-token budget). Target: ≤ 5 ms on
// a 10 000-message thread. The thread mixes user and assistant messages,
// tool groups (some with a missing result), orphaned results and system
// messages, each of up to ~600 bytes.
func BenchmarkSelectTrim(b *testing.B) {
	for _, n := range []int{120, 10_000} {
		msgs := randomHistory(rand.New(rand.NewPCG(7, 11)), n)
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var out []message.Message
			for b.Loop() {
				out = Trim(Select(msgs, SelectOptions{}), DefaultBudget)
			}
			if len(out) == 0 || message.Validate(out) != nil {
				b.Fatal("bad result")
			}
			b.ReportMetric(float64(len(out)), "msgs_kept")
		})
	}
}
