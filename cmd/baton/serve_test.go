package main

import (
	"math"
	"testing"
)

// TestRateShares: --rate-limit with --replicas N gives each replica 1/N of
// the rate and of the burst (at least 1); the shares add up to the fleet's.
func TestRateShares(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit    string
		replicas int
		rate     float64
		burst    int
	}{
		{"", 3, 0, 0},
		{"30/s", 1, 30, 30},
		{"30/s", 3, 10, 10},
		{"10", 3, 10.0 / 3, 4},
		{"120/m", 4, 0.5, 1},
		{"1/s", 5, 0.2, 1},
	} {
		r, err := parseRate(tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		rate, burst := shareRate(r, tc.replicas)
		if math.Abs(rate-tc.rate) > 1e-9 || burst != tc.burst {
			t.Errorf("--rate-limit %q --replicas %d: each replica %g/s with bursts of %d, want %g/s and %d", tc.limit, tc.replicas, rate, burst, tc.rate, tc.burst)
		}
		if tc.burst > 0 && rate*float64(tc.replicas) != r {
			t.Errorf("--rate-limit %q: shares add up to %g/s, want %g/s", tc.limit, rate*float64(tc.replicas), r)
		}
	}
}
