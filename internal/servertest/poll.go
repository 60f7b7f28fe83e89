package servertest

import (
	"testing"
	"time"
)

// Eventually calls cond every interval until it is done, and fails t with
// what its last call said when it is not done within d.
func Eventually(t testing.TB, d, interval time.Duration, cond func() (done bool, why string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		done, why := cond()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(why)
		}
		time.Sleep(interval)
	}
}
