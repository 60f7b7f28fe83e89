package e2e_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// effects is the service behind the HTTP tools (`--tool NAME=URL/CALLER/NAME`):
// it applies the effect of each Idempotency-Key once — a repeated delivery
// of a key gets the first delivery's answer and changes nothing — records
// every delivery, and tells watchers when calls start and end. CALLER, in
// the path, names the process that calls (serve, worker-0, cli-3, …).
type effects struct {
	srv *httptest.Server
	// hold is how long a call of tool takes (nil: no time), so that kills
	// can land in the middle of calls.
	hold func(tool string) time.Duration

	mu         sync.Mutex
	applied    map[string]*delivery // by key: the delivery that applied it
	deliveries []*delivery
	watchers   map[chan callEvent]struct{}
}

// delivery is one call the service received.
type delivery struct {
	caller, tool   string
	key, run, call string
	args           json.RawMessage
	// result is the answer of the key's first delivery.
	result string
	repeat bool
}

// callEvent tells a watcher that a call started or (done) answered.
type callEvent struct {
	caller, tool, key string
	done              bool
}

func newEffects(t *testing.T, hold func(tool string) time.Duration) *effects {
	fx := &effects{hold: hold, applied: map[string]*delivery{}, watchers: map[chan callEvent]struct{}{}}
	fx.srv = httptest.NewServer(fx)
	t.Cleanup(fx.srv.Close)
	return fx
}

// toolFlags are the --tool flags of the process caller.
func (fx *effects) toolFlags(caller string) []string {
	return []string{"--tool", "lookup=" + fx.srv.URL + "/" + caller + "/lookup", "--tool", "ship=" + fx.srv.URL + "/" + caller + "/ship"}
}

func (fx *effects) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	caller, tool, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	key, run, call := r.Header.Get("Idempotency-Key"), r.Header.Get("Baton-Run-Id"), r.Header.Get("Baton-Call-Id")
	args, err := io.ReadAll(r.Body)
	switch {
	case r.Method != http.MethodPost || !ok || err != nil:
		http.Error(w, "want POST /CALLER/TOOL", http.StatusBadRequest)
		return
	case run == "" || call == "" || key != run+":"+call:
		http.Error(w, "missing or malformed Idempotency-Key, Baton-Run-Id or Baton-Call-Id", http.StatusBadRequest)
		return
	case !json.Valid(args):
		http.Error(w, "arguments are not JSON", http.StatusBadRequest)
		return
	}
	d := &delivery{caller: caller, tool: tool, key: key, run: run, call: call, args: args}
	fx.mu.Lock()
	if first, ok := fx.applied[key]; ok {
		d.result, d.repeat = first.result, true
	} else {
		d.result = result(tool, key, args)
		fx.applied[key] = d
	}
	fx.deliveries = append(fx.deliveries, d)
	fx.notify(callEvent{caller: caller, tool: tool, key: key})
	fx.mu.Unlock()
	if fx.hold != nil {
		select {
		case <-time.After(fx.hold(tool)):
		case <-r.Context().Done():
		}
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, d.result)
	fx.mu.Lock()
	fx.notify(callEvent{caller: caller, tool: tool, key: key, done: true})
	fx.mu.Unlock()
}

// result is the answer of a key's effect: the order, and a receipt made
// from the key, so that a result in a thread shows which key it came from.
func result(tool, key string, args json.RawMessage) string {
	var a struct {
		OrderID string `json:"order_id"`
	}
	_ = json.Unmarshal(args, &a)
	status := map[string]string{"lookup": "in transit", "ship": "replacement shipped"}[tool]
	b, _ := json.Marshal(map[string]string{"order_id": a.OrderID, "status": status, "receipt": receipt(key)})
	return string(b)
}

func receipt(key string) string {
	h := sha256.Sum256([]byte(key))
	return "R-" + hex.EncodeToString(h[:4])
}

var receiptRE = regexp.MustCompile(`"receipt":"R-[0-9a-f]{8}"`)

// maskReceipt replaces receipts by one text, for comparing the results of
// different runs.
func maskReceipt(s string) string { return receiptRE.ReplaceAllString(s, `"receipt":"R-…"`) }

// notify tells the watchers of ev, dropping it for a watcher that is
// behind; fx.mu is held.
func (fx *effects) notify(ev callEvent) {
	for ch := range fx.watchers {
		select {
		case ch <- ev:
		default:
		}
	}
}

// watch returns the calls that start and end from now on, until stop.
func (fx *effects) watch() (<-chan callEvent, func()) {
	ch := make(chan callEvent, 256)
	fx.mu.Lock()
	fx.watchers[ch] = struct{}{}
	fx.mu.Unlock()
	return ch, func() {
		fx.mu.Lock()
		delete(fx.watchers, ch)
		fx.mu.Unlock()
	}
}

// all returns every delivery so far, in order.
func (fx *effects) all() []*delivery {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	return slices.Clone(fx.deliveries)
}

// appliedByRunTool counts the effects applied (a repeat delivery, answered
// under its key, is not one) per run and tool, keyed "run/tool".
func (fx *effects) appliedByRunTool() map[string]int {
	n := map[string]int{}
	for _, d := range fx.all() {
		if !d.repeat {
			n[d.run+"/"+d.tool]++
		}
	}
	return n
}

// effect returns the delivery that applied key.
func (fx *effects) effect(key string) (*delivery, bool) {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	d, ok := fx.applied[key]
	return d, ok
}

// keys returns the applied keys of run, sorted.
func (fx *effects) keys(run string) []string {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	var out []string
	for k, d := range fx.applied {
		if d.run == run {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// counts returns how many deliveries the service got, how many keys it
// applied, and how many deliveries repeated an applied key.
func (fx *effects) counts() (deliveries, applied, repeats int) {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	for _, d := range fx.deliveries {
		if d.repeat {
			repeats++
		}
	}
	return len(fx.deliveries), len(fx.applied), repeats
}

// checkResult checks that output, a tool result of run's call, is the
// answer of an applied key of that call.
func (fx *effects) checkResult(run, call, output string) error {
	d, ok := fx.effect(run + ":" + call)
	switch {
	case !ok:
		return fmt.Errorf("run %s: result of call %s comes from no applied effect: %s", run, call, output)
	case d.result != output:
		return fmt.Errorf("run %s: result of call %s is %s, the effect answered %s", run, call, output, d.result)
	}
	return nil
}
