package countdown

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// TrySetCount makes the latch with the handle's count if path holds no
// unfinished latch, and reports whether it did (Redisson's trySetCount).
// An unfinished latch already there is left as it is, whatever its count:
// false. A finished latch not yet deleted is deleted first. With count 0
// nothing is made: it reports whether path holds no unfinished latch.
//
// The create is sent at most once: after a lost reply the latch is read,
// and the setter's own gen- child tells whether it was made. If no latch,
// or another one, is there then, the error wraps zkrecipes.ErrOutcomeUnknown: it
// may have been made and finished already, and making it again could set
// a latch that nobody counts down.
func (l *Countdown) TrySetCount(ctx context.Context) (bool, error) {
	ctx, done, err := l.begin(ctx)
	if err != nil {
		return false, err
	}
	defer done()
	p := l.rt.Pacer()
	if err := l.synced(ctx, p); err != nil {
		return false, l.fail(err, false)
	}
	c := &setCall{l: l, gen: genPrefix + uuid.NewString()}
	for {
		set, nx, err := c.step(ctx)
		switch {
		case nx == again:
		case nx == stop && err == nil:
			return set, nil
		case nx == pause && l.waitOut(ctx, p, err):
		default:
			return false, l.fail(err, c.maybe)
		}
	}
}

// setCall is one TrySetCount: the gen- child it makes the latch with, and
// whether a create it sent may have been applied.
type setCall struct {
	l     *Countdown
	gen   string
	maybe bool
}

// step reads the latch and acts on what it finds: a latch there is
// judged (onLatch), none is made (create), unless a create of ours may
// have made one already.
func (c *setCall) step(ctx context.Context) (bool, next, error) {
	s, err := c.l.read(ctx)
	switch {
	case err != nil:
		return false, pause, err
	case s.exists:
		return c.onLatch(ctx, s)
	case c.maybe:
		// Ours was never made, or made and already finished: making
		// it again could set a second latch that nobody counts down.
		return false, stop, errors.New("no latch is there; ours may have been set and finished")
	case c.l.count == 0:
		return true, stop, nil
	}
	return c.create(ctx)
}

// onLatch judges the latch s found at the path: ours (set), another
// unfinished one (not set), or a finished one, deleted before a new look.
func (c *setCall) onLatch(ctx context.Context, s state) (bool, next, error) {
	switch {
	case slices.Contains(s.kids, c.gen):
		c.l.remember("", c.gen)
		return true, stop, nil
	case c.maybe:
		// Not ours: ours was never made, or made, counted down
		// to zero and replaced.
		return false, stop, errors.New("another latch is there; ours may have been set and finished")
	case s.gen == "":
		// Never a latch: one is made with its gen- child in one
		// multi, and finished with it (a SharedCount at zero,
		// say): not ours to delete or replace.
		return false, stop, fmt.Errorf("%w: count %d and no %s child", zkrecipes.ErrBadData, s.remaining, genPrefix)
	case s.remaining > 0:
		return false, stop, nil
	}
	if err := c.l.finish(ctx); err != nil {
		return false, pause, fmt.Errorf("deleting the finished latch: %w", err)
	}
	return false, again, nil
}

// create sends the multi that makes the latch with its gen- child, at
// most once: after a lost reply the next read tells whether it applied.
func (c *setCall) create(ctx context.Context) (bool, next, error) {
	l := c.l
	_, err := l.client.MultiOnce(ctx,
		&zk.CreateRequest{Path: l.path, Data: encode(l.count)},
		&zk.CreateRequest{Path: framework.Join(l.path, c.gen), Data: l.id})
	var me *framework.MultiOpError
	switch {
	case err == nil:
		l.remember("", c.gen)
		return true, stop, nil
	case errors.As(err, &me) && me.Index == 0 && errors.Is(me.Err, zk.ErrNodeExists):
		return false, again, nil // set by someone else meanwhile: read it
	case errors.As(err, &me) && me.Index == 0 && errors.Is(me.Err, zk.ErrNoNode):
		if err := l.makeParent(ctx); err != nil {
			return false, pause, err
		}
		return false, again, nil
	case me != nil:
		return false, stop, err
	}
	if sent(err) {
		c.maybe = true
	}
	return false, pause, err // the next read tells whether it was applied
}

// makeParent makes the latch's parent, and its own missing parents, as
// containers: the server deletes them once the latches in them are gone.
func (l *Countdown) makeParent(ctx context.Context) error {
	_, err := l.client.Create(ctx, framework.Parent(l.path), nil,
		framework.WithMode(framework.Container), framework.WithParentContainers())
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return err
}
