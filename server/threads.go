package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server/internal/runlog"
	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threadhandoff"
	"github.com/batonhq/baton/threads"
)

// Metadata bounds of POST /v1/threads.
const (
	maxMetadataKeys  = 16
	maxMetadataBytes = 16 << 10
	maxNameLen       = 200
)

var metadataKey = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,64}$`)

// reservedMetadata are the namespaces baton writes itself.
var reservedMetadata = map[string]bool{store.MetadataThreadHandoff: true, threadhandoff.MetadataLastHandoff: true, threads.MetadataQueue: true}

func (s *Server) createThread(w http.ResponseWriter, r *http.Request, c *Caller) error {
	var req wire.CreateThread
	if err := DecodeJSON(r, &req, true); err != nil {
		return err
	}
	if req.Network == "" {
		return BadParam("network", "network is required: the name of the network that runs the thread (GET /v1/networks)")
	}
	nw, err := s.network(req.Network)
	if err != nil {
		return err
	}
	if err := c.RequireNetwork(nw.name); err != nil {
		return err
	}
	if len(req.Name) > maxNameLen || strings.ContainsAny(req.Name, "\r\n") {
		return BadParam("name", "name must be one line of at most %d bytes", maxNameLen)
	}
	if err := checkMetadata(req.Metadata); err != nil {
		return err
	}
	ctx := r.Context()
	if req.ParentID != "" {
		if _, err := s.thread(ctx, c, req.ParentID); err != nil {
			var ae *Error
			if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
				return Errorf(http.StatusNotFound, wire.ErrNotFound, "parent thread %q not found", req.ParentID)
			}
			return err
		}
	}
	if _, err := s.st.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: c.Owner}); err != nil {
		return err
	}
	th, err := s.st.CreateThread(ctx, &store.CreateThreadParams{OwnerID: c.Owner, ParentID: req.ParentID, Name: req.Name, Network: nw.name, Metadata: req.Metadata})
	if err != nil {
		return err
	}
	s.reg.thread(c.Owner, th.ID).setNetwork(th.Network)
	w.Header().Set("Location", "/v1/threads/"+th.ID)
	WriteJSON(w, http.StatusCreated, threadDTO(th))
	return nil
}

func checkMetadata(m map[string]json.RawMessage) error {
	if len(m) > maxMetadataKeys {
		return BadParam("metadata", "metadata has %d keys; at most %d are allowed", len(m), maxMetadataKeys)
	}
	size := 0
	for k, v := range m {
		if !metadataKey.MatchString(k) {
			return BadParam("metadata", "metadata key %q: use 1 to 64 letters, digits, '_', '.' or '-'", k)
		}
		if reservedMetadata[k] {
			return BadParam("metadata", "metadata key %q is reserved for baton", k)
		}
		size += len(k) + len(v)
	}
	if size > maxMetadataBytes {
		return BadParam("metadata", "metadata is %d bytes; at most %d are allowed", size, maxMetadataBytes)
	}
	return nil
}

func threadDTO(th *store.Thread) wire.Thread {
	md := th.Metadata
	if md == nil {
		md = map[string]json.RawMessage{}
	}
	return wire.Thread{ID: th.ID, Object: "thread", Network: th.Network, Name: th.Name, ParentID: th.ParentID, ActiveAgent: th.ActiveAgent,
		Metadata: md, Version: th.Version, CreatedAt: th.CreatedAt, UpdatedAt: th.UpdatedAt}
}

func (s *Server) listThreads(w http.ResponseWriter, r *http.Request, c *Caller) error {
	q := r.URL.Query()
	limit, err := queryInt(q.Get("limit"), "limit", 20, 1, 100)
	if err != nil {
		return err
	}
	cursor := q.Get("cursor")
	if len(cursor) > 512 {
		return BadParam("cursor", "cursor is not one this server returned")
	}
	parent := q.Get("parent_id")
	if parent != "" {
		if _, err := s.thread(r.Context(), c, parent); err != nil {
			return err
		}
	}
	p := &store.ListThreadsParams{OwnerID: c.Owner, Limit: limit, Cursor: cursor, ParentID: parent, Networks: c.Networks}
	page, err := s.st.ListThreads(r.Context(), p)
	if errors.Is(err, store.ErrInvalid) {
		return BadParam("cursor", "cursor is not one this server returned")
	}
	if err != nil {
		return err
	}
	return writePage(w, page.Threads, page.NextCursor, threadDTO)
}

// writePage answers a page of a list route: its items as dto gives them,
// and the cursor of the next page ("" after the last).
func writePage[T, D any](w http.ResponseWriter, items []T, next string, dto func(T) D) error {
	out := wire.List[D]{Object: "list", Data: make([]D, 0, len(items)), NextCursor: next, HasMore: next != ""}
	for _, it := range items {
		out.Data = append(out.Data, dto(it))
	}
	WriteJSON(w, http.StatusOK, out)
	return nil
}

func queryInt(v, name string, def, lo, hi int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, BadParam(name, "%s must be a whole number from %d to %d", name, lo, hi)
	}
	return n, nil
}

func (s *Server) getThread(w http.ResponseWriter, r *http.Request, c *Caller) error {
	th, err := s.thread(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	dto, err := s.threadDetail(r.Context(), c.Owner, th)
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, dto)
	return nil
}

// threadDetail returns th with its latest run and its pending interrupts
// (a run's approvals, a thread handoff proposal).
func (s *Server) threadDetail(ctx context.Context, owner string, th *store.Thread) (wire.ThreadDetail, error) {
	dto := wire.ThreadDetail{Thread: threadDTO(th)}
	var err error
	if dto.Run, err = s.runStatus(ctx, owner, th.ID); err != nil {
		return dto, err
	}
	dto.Interrupts, err = s.pendingInterrupts(ctx, owner, th.ID)
	return dto, err
}

// runStatus returns the state of a thread's latest run, nil without runs.
func (s *Server) runStatus(ctx context.Context, owner, threadID string) (*wire.RunStatus, error) {
	te := s.reg.thread(owner, threadID)
	te.mu.Lock()
	active := te.active
	te.mu.Unlock()
	if active != nil {
		res := active.result()
		return &wire.RunStatus{ID: active.id, Status: res.Status, Active: true, Agent: res.LastAgent, Interrupt: res.Interrupt, EventsURL: res.EventsURL}, nil
	}
	cp, err := s.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, ThreadID: threadID})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	var inc *runstate.IncompatibleError
	if errors.As(err, &inc) || errors.Is(err, store.ErrCorrupt) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &wire.RunStatus{ID: cp.RunID, Status: string(cp.State.Status), Agent: cp.State.Agent, Interrupt: cp.State.Interrupt, EventsURL: EventsURL(threadID, cp.RunID)}, nil
}

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request, c *Caller) error {
	q := r.URL.Query()
	limit, err := queryInt(q.Get("limit"), "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	after, err := queryInt(q.Get("after"), "after", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	th, err := s.thread(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	msgs, err := s.st.ListMessages(r.Context(), &store.ListMessagesParams{OwnerID: c.Owner, ThreadID: th.ID, AfterSeq: int64(after), Limit: limit + 1})
	if err != nil {
		return err
	}
	out := wire.List[wire.Message]{Object: "list", Data: make([]wire.Message, 0, min(len(msgs), limit))}
	if len(msgs) > limit {
		msgs, out.HasMore = msgs[:limit], true
		out.NextCursor = strconv.FormatInt(msgs[limit-1].Seq, 10)
	}
	for _, m := range msgs {
		if threads.IsRolledBack(&m.Message) {
			continue // removed from the thread by a rollback (kept in the store)
		}
		dto := messageDTO(m)
		if m.Status == message.StatusQueued || m.Status == message.StatusStreaming {
			if d, err := s.st.GetDraft(r.Context(), &store.GetDraftParams{OwnerID: c.Owner, MessageID: m.ID}); err == nil {
				dto.Draft = d.Text
			}
		}
		out.Data = append(out.Data, dto)
	}
	WriteJSON(w, http.StatusOK, out)
	return nil
}

func messageDTO(m *store.Message) wire.Message {
	status := string(m.Status)
	if status == "" {
		status = string(message.StatusCompleted)
	}
	dto := wire.Message{ID: m.ID, Object: "thread.message", ThreadID: m.ThreadID, Seq: m.Seq, Role: string(m.Role), Agent: m.Agent,
		Status: status, Text: m.Text(), Usage: m.Usage, Metadata: m.Metadata, CreatedAt: m.CreatedAt, Parts: make([]wire.Part, 0, len(m.Parts))}
	for _, p := range m.Parts {
		switch p.Type {
		case message.PartText, message.PartToolCall, message.PartToolResult:
			dto.Parts = append(dto.Parts, wire.Part{Type: string(p.Type), Text: p.Text, CallID: p.CallID, Name: p.Name, Arguments: p.Arguments, IsError: p.IsError})
		}
	}
	return dto
}

// maxCatchUp bounds the messages a thread stream reads to find the runs
// its client missed: a client further behind gets resync.
var maxCatchUp = 1000

// threadEvents streams a thread's events: the events of its runs (with
// their run_id), drafts of background workers, and thread handoffs. Every
// event of a run has a durable id, "POS.SEQ" (the run's position on the
// thread, its event's seq), drafts "POS.SEQ.VERSION", thread handoffs
// "POS.0.0.0.H" (handoffEntries, from the stored interrupts): with Last-Event-ID
// (or ?after=) the stream sends the events after it — from the log, else
// rebuilt from the store — then follows live. Without one, or with an id
// of before durable ids, it first sends a "thread" snapshot.
func (s *Server) threadEvents(w http.ResponseWriter, r *http.Request, c *Caller) error {
	last := lastEventID(r)
	cur, legacy, err := runlog.ThreadCursor(last)
	if err != nil {
		return BadParam("Last-Event-ID", "Last-Event-ID %q is not an event id of this stream (want POS.SEQ, POS.SEQ.N, POS.SEQ.N.V or POS.SEQ.N.V.H)", last)
	}
	ctx := r.Context()
	th, err := s.thread(ctx, c, r.PathValue("id"))
	if err != nil {
		return err
	}
	if !s.acquireStream(ctx) {
		return s.tooManyStreams()
	}
	te := s.reg.thread(c.Owner, th.ID)
	te.mu.Lock()
	te.subs++
	te.mu.Unlock()
	s.watch.add(te)
	var once sync.Once
	release := func() {
		once.Do(func() {
			te.mu.Lock()
			te.subs--
			te.touched = time.Now()
			te.mu.Unlock()
			s.releaseStream(context.WithoutCancel(ctx))
		})
	}
	sw, err := sse.NewWriter(w, s.sseOptions(http.Header{"Baton-Thread-Id": {th.ID}}))
	if err != nil {
		release()
		return nil
	}
	ts := &threadStream{s: s, te: te, sw: sw, cur: cur, parkedAt: -1, release: release}
	// need: what the store has of the thread when the stream starts, which
	// a reconnecting client gets even when this process has nothing of it
	// in memory (a restart). after=0 (Last-Event-ID: 0) replays the thread
	// from its first run's first event.
	if last == "0" {
		ts.cur, ts.replay = runlog.Cursor{}, true
		ts.need = s.storeTail(ctx, te)
	} else if last != "" && !legacy {
		ts.need = s.storeTail(ctx, te)
	} else {
		// A new subscription, or one of before durable ids: start from a
		// snapshot, at the thread's last event.
		ts.cur = later(te.log.Last(), s.storeTail(ctx, te))
		dto, err := s.threadDetail(ctx, c.Owner, th)
		if err != nil {
			s.log.Warn("thread snapshot", "thread_id", th.ID, "error", err)
		}
		data, _ := json.Marshal(dto)
		if sw.Send(sse.Event{ID: ts.cur.Thread(), Type: "thread", Data: data}) != nil {
			release()
			return nil
		}
	}
	ts.serve(r)
	return nil
}

// lastEventID returns the cursor a stream resumes after: the Last-Event-ID
// header, else the query's last_event_id or after.
func lastEventID(r *http.Request) string {
	if id := sse.LastEventID(r); id != "" {
		return id
	}
	return strings.TrimSpace(r.URL.Query().Get("after"))
}

// later returns the later of a and b.
func later(a, b runlog.Cursor) runlog.Cursor {
	if a.Less(b) {
		return b
	}
	return a
}

// storeTail returns the cursor of a thread's last event in the store: its
// latest run's latest checkpoint, or its last thread handoff event if that
// is later (zero without either). A latest run that is
// not final is followed from the store, so that its next events come.
func (s *Server) storeTail(ctx context.Context, te *threadEntry) runlog.Cursor {
	var tail runlog.Cursor
	cp, err := s.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: te.owner, ThreadID: te.id})
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil {
			s.log.Warn("thread stream: the thread's latest run", "thread_id", te.id, "error", err)
		}
		return later(tail, s.handoffTail(ctx, te))
	}
	run := s.follows(te.owner, cp)
	if pos := s.runPos(ctx, run); pos > 0 {
		tail = s.lastOf(ctx, te.owner, cp)
		tail.Pos = pos
	}
	return later(tail, s.handoffTail(ctx, te))
}

// follows returns the entry of a run of a checkpoint cp, its latest: a run
// that is not final and that this process does not execute is followed
// through the store.
func (s *Server) follows(owner string, cp *store.Checkpoint) *Run {
	run := s.stored(owner, cp)
	switch cp.State.Status {
	case runstate.StatusRunning, runstate.StatusSuspended:
		s.follow(run)
	}
	return run
}

// catchUp sends a thread's events in (cur, upto] rebuilt from the store:
// those of the runs whose first message is at or after cur's run's, listed
// from the thread's messages (a run's first message is "RUN-m1"), each
// rebuilt from its checkpoints, and the thread handoffs' (handoffEntries),
// in id order. It returns the cursor reached (upto, or
// beyond when the log has the rest), or far when more than maxCatchUp
// messages follow cur's run's first: the client should reload the thread.
// With page set, it never gives up so: it sends the events of the runs of
// the next maxCatchUp messages and returns the cursor before the rest, for
// the next call. An error is a client that failed.
func (s *Server) catchUp(ctx context.Context, sw *sse.Writer, te *threadEntry, cur, upto runlog.Cursor, page bool) (runlog.Cursor, bool, error) {
	msgs, err := s.st.ListMessages(ctx, &store.ListMessagesParams{OwnerID: te.owner, ThreadID: te.id, AfterSeq: int64(max(cur.Pos-1, 0)), Limit: maxCatchUp + 1})
	if err != nil {
		if ctx.Err() != nil {
			return cur, false, err
		}
		s.log.Warn("thread stream: the thread's runs", "thread_id", te.id, "error", err)
		return upto, false, nil // the client gets what the log has
	}
	if len(msgs) > maxCatchUp {
		if !page {
			return cur, true, nil
		}
		// The runs whose first message is in this page: every event before
		// the next page's first position.
		if next := (runlog.Cursor{Pos: int(msgs[maxCatchUp].Seq)}); next.Less(upto) {
			upto = next
		}
		msgs = msgs[:maxCatchUp]
	}
	// The events to send: the runs', then the thread handoffs' in between,
	// in id order.
	var out []runlog.Entry
	for _, m := range msgs {
		entries, err := s.runEntries(ctx, te, m, cur, upto)
		if err != nil {
			return cur, false, err
		}
		out = append(out, entries...)
	}
	handoffs, err := s.handoffEvents(ctx, te.owner, te.id)
	if err != nil {
		if ctx.Err() != nil {
			return cur, false, err
		}
		s.log.Warn("thread stream: the thread's handoffs", "thread_id", te.id, "error", err)
	}
	for _, e := range handoffs {
		if cur.Less(e.At) && !upto.Less(e.At) {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b runlog.Entry) int {
		switch {
		case a.At.Less(b.At):
			return -1
		case b.At.Less(a.At):
			return 1
		}
		return 0
	})
	sent := false
	for _, e := range out {
		if !cur.Less(e.At) {
			continue // the same id twice (states no writer makes)
		}
		if err := sw.Put(sse.Event{ID: e.At.Thread(), Type: e.Type, Data: e.Data}); err != nil {
			return cur, false, err
		}
		cur, sent = e.At, true
	}
	if sent {
		if err := sw.Flush(); err != nil {
			return cur, false, err
		}
	}
	if cur.Less(upto) {
		cur = upto
	}
	return cur, false, nil
}

// runEntries returns the events in (cur, upto] of the run whose first
// message is m, rebuilt from its checkpoints, at their thread ids; nothing
// when m is not a run's first message or its events are not in (cur,
// upto]. An error is only ctx's: a run that cannot be read is logged and
// left out (its events then come from the log).
func (s *Server) runEntries(ctx context.Context, te *threadEntry, m *store.Message, cur, upto runlog.Cursor) ([]runlog.Entry, error) {
	runID, first := strings.CutSuffix(m.ID, "-m1")
	pos := int(m.Seq)
	if !first || pos < cur.Pos || !(runlog.Cursor{Pos: pos}).Less(upto) {
		// Not a run's first message, a run before cur's, or one whose
		// events are all after upto (in the log).
		return nil, nil
	}
	var after runlog.Cursor
	if pos == cur.Pos {
		after = runlog.Cursor{Seq: cur.Seq, Sub: cur.Sub, Ver: cur.Ver}
	}
	entries, latest, err := s.rebuildRun(ctx, te.owner, runID, after)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil // not a run's first message
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		s.log.Warn("thread stream: rebuild a run's events", "run_id", runID, "error", err)
		return nil, nil
	}
	if latest.ThreadID != te.id {
		return nil, nil // a run of the source a fork reads its rows from
	}
	if run := s.reg.run(te.owner, runID); run != nil {
		run.mu.Lock()
		run.pos = pos
		run.mu.Unlock()
	}
	var out []runlog.Entry
	for _, e := range entries {
		at := runlog.Cursor{Pos: pos, Seq: e.At.Seq, Sub: e.At.Sub}
		if !cur.Less(at) || upto.Less(at) {
			continue
		}
		out = append(out, runlog.Entry{At: at, Type: e.Type, Data: withRunID(runID, e.Data)})
	}
	if st := latest.State.Status; st == runstate.StatusRunning || st == runstate.StatusSuspended {
		s.follows(te.owner, latest)
	}
	return out, nil
}

// signaller returns the broker's draft.Signaller, nil when it has none,
// and from its first call on wakes the thread entries that a
// draft.KindThread signal names (all of them when the broker may have
// missed signals).
func (s *Server) signaller() draft.Signaller {
	sg, ok := s.cfg.Service.Broker().(draft.Signaller)
	if !ok {
		return nil
	}
	s.reg.listen.Do(func() {
		cancel := sg.OnSignal(draft.KindThread, func(sig draft.Signal) {
			if sig.Key == "" {
				s.reg.eachThread(s.poke)
				return
			}
			if te := s.reg.lookup(sig.OwnerID, sig.Key); te != nil {
				s.poke(te)
			}
		})
		cancelDeltas := sg.OnSignal(draft.DeltaKind, s.onDeltas)
		go func() {
			<-s.runCtx.Done()
			cancel()
			cancelDeltas()
		}()
	})
	return sg
}

// wantEvery is how often a process that streams a thread announces it
// (draft.Want), within the interest's TTL.
const wantEvery = service.ThreadInterestTTL / 3

// want announces, at most every wantEvery, that this process wants the
// signals of te's thread: the processes that run its runs signal their
// checkpoints (service.threadSignaller).
func (s *Server) want(sg draft.Signaller, te *threadEntry) {
	te.mu.Lock()
	due := time.Since(te.wanted) >= wantEvery
	if due {
		te.wanted = time.Now()
	}
	te.mu.Unlock()
	if !due {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(s.runCtx, 5*time.Second)
		defer cancel()
		if err := draft.WantFrom(ctx, sg, draft.KindThread, te.owner, te.id, s.id); err != nil && ctx.Err() == nil {
			s.log.Debug("thread stream: announce interest", "thread_id", te.id, "error", err)
		}
	}()
}

// pollEvery returns how often a thread's watcher reads the store for runs
// of other processes: FollowInterval without signals, eight times that
// with them (a fallback for lost signals and for writers that do not
// signal).
func (s *Server) pollEvery(sg draft.Signaller) time.Duration {
	if sg == nil {
		return s.cfg.FollowInterval
	}
	return 8 * s.cfg.FollowInterval
}
