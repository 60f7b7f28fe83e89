//go:build unix

package telemetry_test

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user + system) the process has used, all
// goroutines included: benchmarks report it per op as well as wall time,
// which a loaded machine inflates.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
