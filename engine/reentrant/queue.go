package reentrant

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
)

// queue is what a Lock and Once share: the queue a node enters, how a
// granted node is followed, and the loop from one to the other. Once
// keeps it on its stack, so that a one-off acquisition pays for nothing
// of a Lock's own.
type queue struct {
	client  *framework.Client
	recipe  string // names the recipe in its errors
	request engine.Request
	lease   time.Duration // each node's lease time; 0: none
	meter   *framework.RecipeMeter
	// How each granted node is followed (opts[:nopts]): made once, so
	// that a Lock's acquisitions do not make the same options again. An
	// array, so that Once's queue stays on its stack.
	opts  [4]engine.Option
	nopts int
}

func newQueue(client *framework.Client, cfg Config) queue {
	request := cfg.Request
	request.Client = client
	q := queue{client: client, recipe: cfg.Recipe, request: request, lease: cfg.LeaseTime,
		meter: client.RecipeMeter(cfg.Kind, request.Dir), nopts: 2}
	q.opts[0], q.opts[1] = engine.WithMetrics(cfg.Kind, request.Dir), engine.WithRecipe(cfg.Recipe, request.Dir)
	if cfg.Revocable {
		q.opts[q.nopts] = engine.WithRevocable()
		q.nopts++
	}
	if cfg.Watcher != nil {
		q.opts[q.nopts] = engine.WithWatcher(cfg.Watcher)
		q.nopts++
	}
	return q
}

// err names the recipe and its path in err.
func (q *queue) err(err error) error { return framework.RecipeErr(q.recipe, q.request.Dir, err) }

// follow follows g, a node granted to this queue, with the recipe's
// options.
func (q *queue) follow(g engine.Grant) *engine.Node {
	return engine.Follow(q.client, g, q.opts[:q.nopts]...)
}

// take queues until a node is granted and hands it, followed, to adopt,
// which makes the caller's Hold of it (or releases it). closed says
// whether the lock or its client has closed, for the error of a wait it
// ended.
func (q *queue) take(ctx context.Context, noWait bool, queued func(string), closed func() bool,
	adopt func(*engine.Node) (*hold.Hold, error)) (*hold.Hold, error) {
	r := q.request
	r.NoWait, r.Queued = noWait, queued
	for {
		e, err := engine.Enter(ctx, r)
		if err != nil {
			return nil, engine.Err(err, closed())
		}
		h, err := adopt(q.follow(*e))
		if errors.Is(err, zkrecipes.ErrHoldLost) && ctx.Err() == nil && !q.client.Closed() {
			// Lost between its grant and its hand-over (a freeze longer
			// than the session's bound): never held, so queue again, as
			// for a session lost while waiting.
			continue
		}
		return h, err
	}
}

// Once is one acquisition of the queue cfg describes, with no Lock: a
// service that locks per entity would otherwise make a Lock per
// acquisition only to drop it. It queues, waits and hands out exactly as a
// Lock's Acquire (the same nodes, errors, metrics and lease), but no
// goroutine owns the Hold and nothing is kept of it but the Hold itself:
// its Release deletes the node, and there is nothing to Close. The
// client's Close ends a wait in progress with zkrecipes.ErrClosed. A nil
// ctx or client, or a closed client, is refused before anything is sent.
func Once(ctx context.Context, client *framework.Client, cfg Config) (_ *hold.Hold, err error) {
	switch {
	case client == nil:
		return nil, framework.RecipeErr(cfg.Recipe, cfg.Request.Dir, fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	case ctx == nil:
		return nil, framework.RecipeErr(cfg.Recipe, cfg.Request.Dir, zkrecipes.ErrNilContext)
	case client.Closed():
		return nil, framework.RecipeErr(cfg.Recipe, cfg.Request.Dir, zkrecipes.ErrClosed)
	}
	q := newQueue(client, cfg)
	start := time.Now()
	defer func() { q.meter.Acquire(ctx, start, err) }()
	h, err := q.take(ctx, false, nil, client.Closed, q.once)
	return h, q.err(err)
}

// once makes the one Hold of n, whose Release deletes n.
func (q *queue) once(n *engine.Node) (*hold.Hold, error) {
	if q.lease > 0 {
		_ = n.Lease(q.lease) // positive: checked by the recipe
	}
	h, err := n.NewHold(func(*hold.Hold) error { return n.Release() })
	if err != nil {
		// Lost between the grant and now: never hand it out.
		_ = n.Release()
		return nil, err
	}
	return h, nil
}
