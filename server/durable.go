package server

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"strings"
	"time"

	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/draft/pgbroker"
	"github.com/batonhq/baton/store/pgstore"
)

// QueueName is the River queue of a network's continuations when a server
// runs several networks: "baton_" and the network's name in lowercase
// letters, digits and '_'. A server with one network uses
// continuation.DefaultQueue, like `baton worker`.
func QueueName(network string) string {
	return "baton_" + strings.Trim(queueUnsafe.ReplaceAllString(strings.ToLower(network), "_"), "_")
}

var queueUnsafe = regexp.MustCompile(`[^a-z0-9]+`)

// setupContinuation gives every network a durable continuation service
// (River on the store's database) built from the Config.Continuation
// template, with one draft broker shared by all.
func (s *Server) setupContinuation() error {
	tmpl := *s.cfg.Continuation
	broker := tmpl.Broker
	if broker == nil {
		if pg, ok := s.st.(*pgstore.Store); ok {
			s.pgBroker = pgbroker.New(pg, &pgbroker.Options{Logger: s.log})
			broker = s.pgBroker
		} else {
			broker = draft.NewHub(s.st)
		}
	}
	queues := map[string]string{}
	for _, nw := range s.netList {
		c := tmpl
		c.Store, c.Threads, c.Broker = s.st, nw.svc, broker
		if c.Logger == nil {
			c.Logger = s.log
		}
		if c.Queue == "" && len(s.netList) > 1 {
			c.Queue = QueueName(nw.name)
		}
		if other, dup := queues[c.Queue]; dup && c.Queue != "" {
			return fmt.Errorf("server: networks %s and %s would share the continuation queue %q", other, nw.name, c.Queue)
		}
		queues[c.Queue] = nw.name
		if c.FetchPollInterval == 0 {
			// River's SQLite driver has no notifications: poll often enough
			// for a person watching the stream.
			c.FetchPollInterval = 250 * time.Millisecond
		}
		cont, err := continuation.New(c)
		if err != nil {
			return fmt.Errorf("server: network %s: %w", nw.name, err)
		}
		nw.cont = cont
	}
	if s.cfg.Drafts == nil {
		s.cfg.Drafts = BrokerDrafts(broker)
	}
	s.bg = durable{}
	return nil
}

// durable is the Background of durable continuation: the job is already in
// River's queue (enqueued in the checkpoint transaction), and the server
// follows the run through the store.
type durable struct{}

func (durable) Continue(context.Context, Job) (bool, error) { return false, nil }

// Start starts what runs beside the requests: the durable continuation
// services (River's migrations, the draft broker, and the workers unless
// their config says NoWorkers). Without Config.Continuation it does
// nothing. Shutdown stops them.
func (s *Server) Start(ctx context.Context) error {
	if s.pgBroker != nil {
		if err := s.pgBroker.Start(ctx); err != nil {
			return fmt.Errorf("server: draft broker: %w", err)
		}
	}
	for _, nw := range s.netList {
		if nw.cont == nil {
			continue
		}
		if err := nw.cont.Start(ctx); err != nil {
			return fmt.Errorf("server: network %s: %w", nw.name, err)
		}
	}
	return nil
}

// stopContinuation stops the continuation services: running continuations
// finish until ctx ends, then resume later from their last checkpoint.
func (s *Server) stopContinuation(ctx context.Context) error {
	var errs []error
	for _, nw := range s.netList {
		if nw.cont != nil {
			errs = append(errs, nw.cont.Stop(ctx))
		}
	}
	if s.pgBroker != nil {
		errs = append(errs, s.pgBroker.Close())
	}
	return errors.Join(errs...)
}

// BrokerDrafts adapts a draft broker to a [DraftSource].
func BrokerDrafts(b draft.Broker) DraftSource { return brokerDrafts{b} }

type brokerDrafts struct{ b draft.Broker }

func (d brokerDrafts) SubscribeThread(ctx context.Context, owner, threadID string) iter.Seq2[DraftUpdate, error] {
	return func(yield func(DraftUpdate, error) bool) {
		for u, err := range d.b.Subscribe(ctx, draft.Filter{OwnerID: owner, ThreadID: threadID}) {
			if err != nil {
				yield(DraftUpdate{}, err)
				return
			}
			if !yield(DraftUpdate{MessageID: u.MessageID, Status: string(u.Status), Text: u.Text, Version: u.Version, Final: u.Final}, nil) {
				return
			}
		}
	}
}
