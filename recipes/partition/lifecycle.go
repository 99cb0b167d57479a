package partition

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// Start joins the partition: it makes this member's node, reads the
// members (and, for ChildrenOf, the items), and from then on takes and
// gives up items as the members and the items change, until Close. It
// returns once joined, or with ctx's error, leaving nothing behind; the
// items are acquired in the background (Subscribe, Owned).
func (p *Partitioner) Start(ctx context.Context) error {
	if err := p.usable(); err != nil {
		return err
	}
	return p.rt.Start(ctx, p.begin)
}

// begin reads the views Assign needs, joins the members, and starts the
// loop that takes and gives up items, with a poke of it at every change
// of a view. If a view or the join fails, it undoes the views (a Member
// whose Start failed starts again: it is kept). A runtime that refuses
// work is closing: its Close closes what begin made.
func (p *Partitioner) begin(ctx context.Context) error {
	ch, locks, err := p.openViews(ctx)
	if err != nil {
		return err
	}
	memberSub := p.member.Subscribe()
	if err := p.member.Start(ctx); err != nil {
		memberSub.Close()
		closeViews(ch, locks)
		return err
	}
	p.mu.Lock()
	p.cache, p.locks = ch, locks
	p.mu.Unlock()
	ok := pokeOn(p, memberSub, p.member.Subscribe) && pokeOn(p, locks.Subscribe(), locks.Subscribe) &&
		(ch == nil || pokeOn(p, ch.Subscribe(), ch.Subscribe)) && p.rt.Go(p.run)
	if !ok {
		return zkrecipes.ErrClosed
	}
	p.poke()
	return nil
}

// openViews starts the cache of the items (ChildrenOf only, else nil)
// and that of their lock nodes. The owners are an input of Assign (it is
// sticky): the first lock node of each item, whose data is its holder's
// member id. On failure nothing is left open.
func (p *Partitioner) openViews(ctx context.Context) (ch, locks *cache.Cache, err error) {
	defer func() {
		if err != nil {
			closeViews(ch, locks)
			ch, locks = nil, nil
		}
	}()
	if p.items.path != "" {
		if ch, err = cache.New(p.client, p.items.path, cache.Children(), cache.WithoutData()); err != nil {
			return ch, locks, err
		}
		if err = ch.Start(ctx); err != nil {
			return ch, locks, err
		}
	}
	if locks, err = cache.New(p.client, framework.Join(p.path, "items"), cache.Tree(2)); err != nil {
		return ch, locks, err
	}
	return ch, locks, locks.Start(ctx)
}

// closeViews closes the caches that are not nil.
func closeViews(views ...*cache.Cache) {
	for _, v := range views {
		if v != nil {
			_ = v.Close()
		}
	}
}

// pokeOn runs forward over sub, made by subscribe, as the runtime's work;
// if the runtime refuses it (it is closing), sub is closed and pokeOn
// reports false.
func pokeOn[T any](p *Partitioner, sub *framework.Subscription[T], subscribe func() *framework.Subscription[T]) bool {
	if p.rt.Go(func(life context.Context) { forward(p, life, sub, subscribe) }) {
		return true
	}
	sub.Close()
	return false
}

// forward turns every change of a followed view into a poke of the run
// loop: the loop reads the views afresh, so what changed does not matter,
// and a subscription that fell behind is replaced by a new one (subscribe)
// at the cost of one more poke.
func forward[T any](p *Partitioner, life context.Context, sub *framework.Subscription[T], subscribe func() *framework.Subscription[T]) {
	defer func() { sub.Close() }()
	for {
		select {
		case _, ok := <-sub.Changes():
			if !ok && errors.Is(sub.Err(), zkrecipes.ErrFellBehind) {
				sub.Close()
				sub = subscribe()
				continue
			}
			if !ok {
				return
			}
			p.poke()
		case <-life.Done():
			return
		}
	}
}

func (p *Partitioner) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Close gives up every item (stopping their workers and waiting for them,
// then releasing their holds), leaves the group of members and stops
// following the items. It is idempotent: later calls return nil; Start
// after it returns zkrecipes.ErrClosed. The client is not closed.
func (p *Partitioner) Close() error {
	if err := p.usable(); err != nil {
		return err
	}
	return p.rt.Close(p.release)
}

// release is Close's, once the runtime has ended the background work and
// waited for it: every worker has returned (their contexts end with the
// runtime's), and every acquire and hand-back under way is over. It gives
// back the items still held, each saying Released (zkrecipes.ErrClosed)
// or Lost, then closes the items' locks, leaves the members, stops
// following the views, and ends the subscriptions, the gives-back last
// on them.
func (p *Partitioner) release(context.Context) error {
	type held struct {
		item string
		s    *slot
	}
	var all []held
	p.mu.Lock()
	for it, s := range p.slots {
		if s.h != nil {
			s.retiring = true
			all = append(all, held{it, s})
		}
	}
	ch, locks := p.cache, p.locks
	p.mu.Unlock()
	slices.SortFunc(all, func(a, b held) int { return strings.Compare(a.item, b.item) })
	for _, h := range all {
		p.giveBack(h.item, h.s, zkrecipes.ErrClosed)
	}
	p.mu.Lock()
	for _, s := range p.slots {
		_ = s.lock.Close()
	}
	p.mu.Unlock()
	_ = p.member.Close()
	closeViews(ch, locks)
	p.feed.End(nil)
	return nil
}
