package eval

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/eval/evalset"
	"github.com/batonhq/baton/eval/metric"
	"github.com/batonhq/baton/eval/replay"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/netspec"
	"github.com/batonhq/baton/service"
)

// Target is a network to evaluate: a network file and how to load it.
type Target struct {
	// File is the network file.
	File string
	// Load are the options of service.Load (--model, --tool …); Run adds
	// the replay of models and tools (Load.WrapModel and Load.WrapTool, if
	// set, wrap inside it).
	Load service.LoadOptions
}

// DefaultConcurrency is how many cases run at once by default.
const DefaultConcurrency = 4

// Config configures [Run]. Set and Network are required.
type Config struct {
	Set *evalset.Set
	// Network is the candidate: the network being evaluated.
	Network Target
	// Baseline, if set, runs every case too; the report compares the
	// candidate with it, and a check that passes on the baseline and fails
	// on the candidate is a regression.
	Baseline *Target
	// Concurrency is how many cases run at once; defaults to
	// [DefaultConcurrency].
	Concurrency int
	// LiveTools runs the tool calls that have no recorded result; by
	// default they are answered with an error and reported.
	LiveTools bool
	// Judge is the default judge model of rubrics, as --model takes models
	// (openai:gpt-4.1-mini …); a rubric may name its own.
	Judge string
	// Judges, if set, resolves judges instead (tests): name is a rubric's
	// judge or Judge.
	Judges metric.Judges
	// Database, if set, is the database of the candidate's runs (a URL as
	// service.Config takes it); by default each network runs on a private
	// in-memory SQLite database: what an eval's runs store is read back
	// only by the eval, and needs no disk.
	Database string
	// Progress, if set, is called after each case with the number of cases
	// done and the total; calls do not overlap.
	Progress func(done, total int)
	// Logger defaults to one that discards.
	Logger *slog.Logger
}

// owner is the owner of the threads of an eval's runs.
const owner = "eval"

// Run runs every case of cfg.Set on cfg.Network (and cfg.Baseline) and
// scores them. An error is returned only when the runs cannot be made (a
// network that does not load, a database that does not open); a case that
// fails is in the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Set == nil || cfg.Network.File == "" {
		return nil, errors.New("eval: Config needs Set and Network.File")
	}
	if err := evalset.Validate(cfg.Set); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	cand, err := open(ctx, cfg.Network, cfg.Database, log)
	if err != nil {
		return nil, err
	}
	defer cand.close()
	var base *network
	if cfg.Baseline != nil {
		if base, err = open(ctx, *cfg.Baseline, "", log); err != nil {
			return nil, err
		}
		defer base.close()
	}
	e := &engine{cfg: cfg, judges: cfg.Judges}
	if e.judges == nil {
		e.judges = modelJudges(cfg.Judge)
	}
	r := &Report{Set: cfg.Set.Name, Description: cfg.Set.Description, Network: cfg.Network.File, StartedAt: start}
	if base != nil {
		r.Baseline = cfg.Baseline.File
	}
	r.Cases = e.runAll(ctx, cand, base)
	r.DurationMS = time.Since(start).Milliseconds()
	r.summarise()
	return r, nil
}

// network is a target opened: its service, and what eval needs of it.
type network struct {
	svc *service.Service
	net *service.Network
	// fingerprints are the agents' (replay.Fingerprints).
	fingerprints map[string]string
	// agents are the network's agents; transfers their transfer tools.
	agents    map[string]bool
	transfers map[string]map[string]bool
}

// memoryDatabase is the default database of an eval's runs.
const memoryDatabase = "sqlite::memory:"

// open loads t with replay at its seams and opens its service on database
// (default: a private in-memory SQLite database).
func open(ctx context.Context, t Target, database string, log *slog.Logger) (*network, error) {
	opts := t.Load
	if opts.Logger == nil {
		opts.Logger = log
	}
	wrapModel, wrapTool := opts.WrapModel, opts.WrapTool
	opts.WrapModel = func(name string, m model.Model) model.Model {
		if wrapModel != nil {
			m = wrapModel(name, m)
		}
		return replay.Model(name, m)
	}
	opts.WrapTool = func(name string, fn netspec.ToolFunc) netspec.ToolFunc {
		if wrapTool != nil {
			fn = wrapTool(name, fn)
		}
		return replay.Tool(name, fn)
	}
	spec, err := service.Load(t.File, opts)
	if err != nil {
		return nil, err
	}
	n := &network{fingerprints: replay.Fingerprints(spec.Network, spec.File, t.Load.Model),
		agents: map[string]bool{}, transfers: transferTools(spec.Network)}
	for _, name := range spec.Network.Names() {
		n.agents[name] = true
	}
	if database == "" {
		database = memoryDatabase
	}
	n.svc, err = service.Open(ctx, service.Config{Networks: []service.Definition{service.DefinitionOf(spec)}, Database: database, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("eval: %s: %w", t.File, err)
	}
	if err := n.svc.Start(context.WithoutCancel(ctx)); err != nil {
		n.svc.Close()
		return nil, fmt.Errorf("eval: %s: %w", t.File, err)
	}
	n.net = n.svc.Networks()[0]
	return n, nil
}

func (n *network) close() {
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = n.svc.Stop(sctx)
	_ = n.svc.Close()
}

// transferTools returns each agent's transfer tools, by agent.
func transferTools(n *agent.Network) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, a := range n.Agents() {
		out[a.Name] = map[string]bool{}
		for _, t := range a.Transfers {
			out[a.Name][t.Tool()] = true
		}
	}
	return out
}

// engine runs the cases.
type engine struct {
	cfg    Config
	judges metric.Judges
}

// runAll runs every case, Concurrency at once, in the set's order in the
// result.
func (e *engine) runAll(ctx context.Context, cand, base *network) []*CaseResult {
	cases := e.cfg.Set.Cases
	out := make([]*CaseResult, len(cases))
	workers := e.cfg.Concurrency
	if workers <= 0 {
		workers = DefaultConcurrency
	}
	next := make(chan int)
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	for range min(workers, len(cases)) {
		wg.Go(func() {
			for i := range next {
				out[i] = e.runCase(ctx, &cases[i], cand, base)
				mu.Lock()
				done++
				if e.cfg.Progress != nil {
					e.cfg.Progress(done, len(cases))
				}
				mu.Unlock()
			}
		})
	}
	for i := range cases {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// runCase runs a case on the candidate and the baseline and compares them.
func (e *engine) runCase(ctx context.Context, c *evalset.Case, cand, base *network) *CaseResult {
	r := &CaseResult{ID: c.ID, Description: c.Description, Line: c.Line}
	for _, t := range c.Turns {
		r.Inputs = append(r.Inputs, t.User)
	}
	r.Candidate = e.runOn(ctx, c, cand)
	if base != nil {
		r.Baseline = e.runOn(ctx, c, base)
	}
	r.compare(c)
	return r
}

// runOn runs the turns of c on n, one thread, and scores them.
func (e *engine) runOn(ctx context.Context, c *evalset.Case, n *network) *RunResult {
	rr := &RunResult{}
	var recorded map[string]string
	if c.Recording != nil {
		recorded = c.Recording.Agents
	}
	unchanged := replay.Unchanged(n.fingerprints, recorded)
	threadID := ""
	for i := range c.Turns {
		t := &c.Turns[i]
		var rec *evalset.Outcome
		if c.Recording != nil && i < len(c.Recording.Turns) {
			rec = &c.Recording.Turns[i]
		}
		s := replay.NewSession(replay.Config{Recorded: rec, Agents: n.agents, Unchanged: unchanged, LiveTools: e.cfg.LiveTools})
		o := e.turn(replay.WithSession(ctx, s), n, t, &threadID)
		o.ModelCalls = s.ModelCalls()
		rr.add(&o, s.Unmatched())
		rr.Checks = append(rr.Checks, metric.Score(ctx, i+1, t.User, t.Expect, &o, e.judges)...)
		if ctx.Err() != nil {
			break
		}
	}
	rr.Pass = rr.passes()
	return rr
}
