package continuationbench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// ServerPIDVar names the environment variable that gives the pairs
// ([Versus], [SchemaPair]) the process id of a PostgreSQL postmaster on this
// machine that serves the benchmark and nothing else: each batch then also
// records the CPU time of that server (the postmaster, its live children
// and the children it has reaped) per unit, reported as <side>-pg-cpu-ms.
// Unlike the machine's CPU, that figure leaves out the other work of a
// shared machine.
const ServerPIDVar = "BENCH_PG_PID"

// serverCPU returns the CPU time (user and system) the PostgreSQL server
// named by [ServerPIDVar] has used, false when it is not set or not
// readable.
func serverCPU() (time.Duration, bool) {
	pid, err := strconv.Atoi(os.Getenv(ServerPIDVar))
	if err != nil || pid <= 0 {
		return 0, false
	}
	f, err := procStat(pid)
	if err != nil {
		return 0, false
	}
	ticks := f[11] + f[12] + f[13] + f[14] // utime stime cutime cstime
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, e := range dir {
		c, err := strconv.Atoi(e.Name())
		if err != nil || c == pid {
			continue
		}
		g, err := procStat(c)
		if err != nil || g[1] != int64(pid) { // ppid
			continue
		}
		ticks += g[11] + g[12]
	}
	return time.Duration(ticks) * 10 * time.Millisecond, true // USER_HZ is 100 on Linux
}

// procStat returns the numeric fields of /proc/pid/stat after the
// command's name (index 0 is the state, a letter: 0 here; 1 the parent's
// pid; 11 to 14 utime, stime, cutime, cstime in clock ticks).
func procStat(pid int) ([]int64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := bytes.Fields(raw[i+1:])
	if len(fields) < 15 {
		return nil, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	v := make([]int64, 15)
	for j := 1; j < 15; j++ {
		if v[j], err = strconv.ParseInt(string(fields[j]), 10, 64); err != nil {
			return nil, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
	}
	return v, nil
}
