package netspec_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/netspec"
)

// FuzzLoad feeds arbitrary bytes to the loader: it must return a network or
// an *Error with at least one problem, each with a message and a line inside
// the file, and never panic or hang. A network loads the same way twice.
func FuzzLoad(f *testing.F) {
	paths, _ := filepath.Glob("../examples/*/network.yaml")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(fullNetwork))
	for _, c := range problemCases {
		f.Add([]byte(c.yaml))
	}
	f.Add([]byte(mcpNetwork))
	mcp := &fakeMCP{offers: map[string][]netspec.MCPTool{"notes": notesTools}}
	opts := netspec.Options{Provider: fakeProvider(nil), MCP: mcp.resolve, Remote: fakeRemote}
	f.Fuzz(func(t *testing.T, data []byte) {
		// A hang crashes the worker, and the fuzzer keeps the input.
		watchdog := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("Parse hangs on %q", data)) })
		spec, err := netspec.Parse(data, "fuzz.yaml", opts)
		watchdog.Stop()
		if err != nil {
			if spec != nil {
				t.Fatalf("both a spec and an error: %v", err)
			}
			var ne *netspec.Error
			if !errors.As(err, &ne) {
				t.Fatalf("error %T (%v), want *netspec.Error", err, err)
			}
			if len(ne.Problems) == 0 {
				t.Fatal("*netspec.Error without problems")
			}
			// YAML breaks lines at \n, \r\n and a lone \r.
			lines := 1 + bytes.Count(data, []byte("\n")) + bytes.Count(data, []byte("\r")) - bytes.Count(data, []byte("\r\n"))
			for _, p := range ne.Problems {
				if p.Message == "" {
					t.Errorf("problem without a message: %+v", p)
				}
				if p.Line < 0 || p.Line > lines+1 {
					t.Errorf("problem at line %d of a %d-line file: %+v", p.Line, lines, p)
				}
			}
			return
		}
		if spec.Network == nil || spec.Network.Fingerprint() == "" || len(spec.Network.Agents()) == 0 {
			t.Fatalf("loaded spec without a network: %+v", spec)
		}
		again, err := netspec.Parse(data, "fuzz.yaml", opts)
		if err != nil {
			t.Fatalf("second load failed: %v", err)
		}
		if a, b := spec.Network.Fingerprint(), again.Network.Fingerprint(); a != b {
			t.Fatalf("fingerprint %s, then %s", a, b)
		}
	})
}
