package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/batonhq/baton/netspec"
	"github.com/batonhq/baton/runner"
)

func loadNetwork(path string) (*netspec.Spec, error) {
	spec, err := netspec.Load(path, netspec.Options{Provider: providerFactory()})
	if err != nil {
		var ne *netspec.Error
		if errors.As(err, &ne) {
			return nil, usageError{err}
		}
		return nil, usageError{err}
	}
	return spec, nil
}

func newRunner(spec *netspec.Spec) (*runner.Runner, error) {
	return runner.New(runner.Config{Network: spec.Network, Policy: spec.Policy, Picker: spec.Picker})
}

func cmdValidate(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return usagef("%v", err)
	}
	if fs.NArg() != 1 {
		return usagef("want one network file: baton validate NETWORK.yaml")
	}
	spec, err := loadNetwork(fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: network %s is valid: %d agents, fingerprint %s\n", fs.Arg(0), spec.Network.Name(), len(spec.Network.Agents()), spec.Network.Fingerprint())
	return nil
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonOut := fs.Bool("json", false, "print one JSON object per event")
	agentName := fs.String("agent", "", "start with this agent instead of the picker's choice")
	if err := fs.Parse(reorder(args, map[string]bool{"json": true})); err != nil {
		return usageError{err}
	}
	if fs.NArg() != 2 {
		return usagef("want a network file and a message: baton run NETWORK.yaml \"message\"")
	}
	spec, err := loadNetwork(fs.Arg(0))
	if err != nil {
		return err
	}
	if *agentName != "" {
		if _, ok := spec.Network.Agent(*agentName); !ok {
			return usagef("unknown agent %q", *agentName)
		}
	}
	r, err := newRunner(spec)
	if err != nil {
		return err
	}
	var opts []runner.RunOption
	if *agentName != "" {
		opts = append(opts, runner.WithAgent(*agentName))
	}
	var p printer
	if *jsonOut {
		p = &jsonPrinter{enc: json.NewEncoder(stdout)}
	} else {
		p = &textPrinter{w: stdout}
	}
	var runErr error
	for ev, err := range r.Stream(ctx, fs.Arg(1), opts...) {
		if err != nil {
			runErr = err
			break
		}
		p.print(ev)
	}
	p.done()
	var re *runner.Error
	if errors.As(runErr, &re) && re.Kind == runner.KindUserInput {
		return usageError{runErr}
	}
	return runErr
}

// reorder moves flags after positional arguments to the front, so that
// `baton run FILE "msg" --json` works like `baton run --json FILE "msg"`.
func reorder(args []string, boolFlags map[string]bool) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && !boolFlags[name] && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}
