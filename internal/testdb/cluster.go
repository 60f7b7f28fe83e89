package testdb

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a private PostgreSQL server for tests that stop, restart or
// crash it (a database outage): a data directory of its own, initialised
// with the Debian binaries (/usr/lib/postgresql/N/bin) and listening on a
// free loopback port, so that the shared test database is never touched.
// It is removed when the test ends.
type Cluster struct {
	t    testing.TB
	bin  string
	dir  string // data directory
	port int
	// as runs the server's commands as this user when the test runs as
	// root (PostgreSQL refuses to run as root); "" runs them directly.
	as string
}

// NewCluster initialises and starts a private cluster, or skips the test
// when no PostgreSQL binaries are installed (fails it with CI=true).
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("no PostgreSQL binaries under /usr/lib/postgresql: the outage tests must run in CI")
		}
		t.Skip("no PostgreSQL binaries under /usr/lib/postgresql")
	}
	sort.Strings(bins)
	c := &Cluster{t: t, bin: filepath.Dir(bins[len(bins)-1])}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			t.Skip("running as root without a postgres user: PostgreSQL refuses to run as root")
		}
		c.as = "postgres"
	}
	base, err := os.MkdirTemp("", "baton-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	c.dir = filepath.Join(base, "data")
	if c.as != "" {
		if out, err := exec.Command("chown", c.as, base).CombinedOutput(); err != nil {
			t.Fatalf("chown %s: %v: %s", base, err, out)
		}
	}
	if out, err := c.cmd("initdb", "-D", c.dir, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v: %s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	conf := fmt.Sprintf("port = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nfsync = off\nmax_connections = 200\nshared_buffers = 32MB\n", c.port, base)
	f, err := os.OpenFile(filepath.Join(c.dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(conf)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	t.Cleanup(func() { _ = c.ctl("stop", "-m", "immediate") })
	conn, err := pgx.Connect(context.Background(), c.adminURL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "CREATE DATABASE test"); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *Cluster) cmd(name string, args ...string) *exec.Cmd {
	path := filepath.Join(c.bin, name)
	if c.as == "" {
		return exec.Command(path, args...)
	}
	return exec.Command("runuser", append([]string{"-u", c.as, "--", path}, args...)...)
}

func (c *Cluster) ctl(args ...string) error {
	args = append([]string{"-D", c.dir, "-w", "-t", "60", "-l", filepath.Join(filepath.Dir(c.dir), "server.log")}, args...)
	out, err := c.cmd("pg_ctl", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %v: %w: %s", args, err, out)
	}
	return nil
}

func (c *Cluster) adminURL(db string) string {
	return "postgres://postgres@127.0.0.1:" + strconv.Itoa(c.port) + "/" + db + "?sslmode=disable"
}

// URL is the cluster's test database, as BATON_TEST_DATABASE_URL would
// name it.
func (c *Cluster) URL() string { return c.adminURL("test") }

// Start starts the server and waits until it accepts connections.
func (c *Cluster) Start() {
	c.t.Helper()
	if err := c.ctl("start"); err != nil {
		c.t.Fatal(err)
	}
}

// Stop stops the server in mode: "smart", "fast" (disconnect clients,
// clean shutdown) or "immediate" (no clean shutdown: crash recovery at the
// next start).
func (c *Cluster) Stop(mode string) {
	c.t.Helper()
	if err := c.ctl("stop", "-m", mode); err != nil {
		c.t.Fatal(err)
	}
}

// Restart stops the server in mode and starts it again; it returns how
// long it was down (from the stop's start to accepting connections).
func (c *Cluster) Restart(mode string) time.Duration {
	c.t.Helper()
	start := time.Now()
	if err := c.ctl("restart", "-m", mode); err != nil {
		c.t.Fatal(err)
	}
	return time.Since(start)
}

// Log returns the server's log.
func (c *Cluster) Log() string {
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(c.dir), "server.log"))
	return string(b)
}
