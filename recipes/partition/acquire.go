package partition

import (
	"context"
	"errors"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/hold"
)

// acquire queues for item's lock as the runtime's work, until it holds it
// or the item stops being this member's (s.cancel). Called with p.mu held.
//
// The work runs on a goroutine of its own (Runtime.Go), and the item's
// Mutex is reentrant per goroutine; each item has a Mutex of its own, only
// this loop acquires s.lock, one loop per slot at a time, never while s.h
// is set, and every hold it gets is released through its handle (own's
// refusal, giveBack) before the slot can queue again: no acquire here can
// be granted on a holding it did not make.
func (p *Partitioner) acquire(life context.Context, item string, s *slot) {
	ctx, cancel := context.WithCancel(life)
	s.acquiring, s.cancel = true, cancel
	if !p.rt.Go(func(life context.Context) { p.queue(life, ctx, cancel, item, s) }) {
		// Closing: nothing is acquired any more.
		cancel()
		s.acquiring, s.cancel = false, nil
	}
}

// queue is acquire's work: Acquire, and again after a failure (the
// session lost while queued, the link down), paced by the runtime's
// policy, until the lock is granted or ctx ends.
func (p *Partitioner) queue(life, ctx context.Context, cancel context.CancelFunc, item string, s *slot) {
	defer cancel()
	pacer := p.rt.Pacer()
	for {
		h, err := s.lock.Acquire(ctx)
		if err == nil {
			p.own(life, item, s, h)
			return
		}
		if ctx.Err() != nil || !p.rt.Retry(ctx, pacer, err) {
			p.mu.Lock()
			s.acquiring, s.cancel = false, nil
			p.mu.Unlock()
			p.poke()
			return
		}
	}
}

// own makes h, just granted, item's hold: it starts the worker and the
// watch on the hold's loss, and says Acquired. If the item stopped being
// this member's before its turn came, or h was lost on its way here
// (h.Err checks the link's proof of life again: a process thawed after a
// long freeze), or the runtime is closing, h is given back unseen (no one
// was told it was ours).
func (p *Partitioner) own(life context.Context, item string, s *slot, h *hold.Hold) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.acquiring, s.cancel = false, nil
	if life.Err() != nil || !p.want[item] || p.slots[item] != s || h.Err() != nil || !p.startWork(life, item, s, h) {
		_ = h.Release()
		p.poke()
		return
	}
	s.h = h
	p.feed.Publish(Event{Kind: Acquired, Item: item, Hold: h})
	// The loop must learn of the loss to say so and take it again; no
	// goroutine waits for it (hold.Hold.Context costs none). The hold's
	// release and Close poke too: a pass finds nothing to do.
	context.AfterFunc(h.Context(life), p.poke)
}

// startWork runs the worker (WithWorker), if any, for item under h, as
// the runtime's work: its context ends with the hold's, at stopWork
// (giveBack), and with the runtime's (Close), and workDone closes once it
// has returned. It reports false if the runtime refused it (closing).
// Called with p.mu held.
func (p *Partitioner) startWork(life context.Context, item string, s *slot, h *hold.Hold) bool {
	if p.cfg.worker == nil {
		return true
	}
	wctx, stop := context.WithCancel(life)
	done := make(chan struct{})
	if !p.rt.Go(func(context.Context) {
		defer close(done)
		if h.Err() != nil {
			return // lost before its worker began: the loop retires it
		}
		p.cfg.worker(h.Context(wctx), item, h)
	}) {
		stop()
		return false
	}
	s.stopWork, s.workDone = stop, done
	return true
}

// retire gives item up (giveBack) as the runtime's work. A runtime that
// refuses it is closing: Close gives the item back. Called with p.mu
// held.
func (p *Partitioner) retire(item string, s *slot) {
	s.retiring = true
	if !p.rt.Go(func(context.Context) { p.giveBack(item, s, nil) }) {
		s.retiring = false
	}
}

// giveBack gives up item, which s holds and is retiring (nothing else
// changes its hold meanwhile): it stops the worker, waits for it, then
// releases the hold (whose Done fires before its lock node is deleted, so
// before the next owner can have it), and says so. The lock is given back
// only once the worker has returned: the next owner's worker must not
// start while this one still runs. closeErr is zkrecipes.ErrClosed from
// Close, else nil.
func (p *Partitioner) giveBack(item string, s *slot, closeErr error) {
	p.mu.Lock()
	h, stop, done := s.h, s.stopWork, s.workDone
	p.mu.Unlock()
	lost := h.Err()
	if stop != nil {
		stop()
		<-done
	}
	relErr := h.Release()
	ev := Event{Kind: Released, Item: item, Hold: h, Err: closeErr}
	switch {
	case lost != nil:
		ev.Kind, ev.Err = Lost, lost
	case errors.Is(relErr, zkrecipes.ErrHoldLost):
		// Lost while the worker stopped: its last moments were not
		// protected.
		ev.Kind, ev.Err = Lost, h.Err()
	}
	p.mu.Lock()
	p.feed.Publish(ev)
	s.h, s.retiring, s.stopWork, s.workDone = nil, false, nil, nil
	p.mu.Unlock()
	p.poke()
}
