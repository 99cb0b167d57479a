package countdown

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// CountDown counts the latch down by one, exactly once per call, and
// reports whether this call counted. It returns false with no error when
// there is nothing to count: no latch at path, or one already at zero (a
// no-op, as Redisson's countDown on an open latch). The call that takes
// the latch to zero deletes it (see the package doc).
//
// The multi that counts is sent at most once at a time; after a lost
// reply (a cut link, a session expiry, a server restart) CountDown waits
// for the link, reads the latch, and either finds its own cd- child
// (counted), or sends the same multi again, which cannot count twice. If
// the latch finished or went away while that outcome was unknown, or ctx
// ends after the multi may have reached the server, the error wraps
// zkrecipes.ErrOutcomeUnknown: the call may or may not have counted. A call that
// knows it counted deletes its cd- child before it returns (guaranteed:
// the client goes on in the background if the link is down).
func (l *Countdown) CountDown(ctx context.Context) (bool, error) {
	ctx, done, err := l.begin(ctx)
	if err != nil {
		return false, err
	}
	defer done()
	p := l.rt.Pacer()
	if err := l.synced(ctx, p); err != nil {
		return false, l.fail(err, false)
	}
	c := &downCall{l: l, mine: framework.Join(l.path, cdPrefix+uuid.NewString())}
	for {
		counted, nx, err := c.step(ctx)
		switch {
		case nx == again:
			p.Reset()
		case nx == stop && err == nil:
			return counted, nil
		case nx == pause && l.waitOut(ctx, p, err):
		default:
			return false, l.fail(err, c.maybe)
		}
	}
}

// downCall is one CountDown: the path of the cd- child its multi makes,
// whether a multi it sent may have been applied, and the latch (its gen-
// child) that multi was for.
type downCall struct {
	l       *Countdown
	mine    string
	maybe   bool
	sentGen string
}

// step reads the latch and acts on what it finds: counted already (a
// multi of ours whose reply was lost), nothing to count, or a count-down
// to send (count).
func (c *downCall) step(ctx context.Context) (bool, next, error) {
	l := c.l
	s, err := l.look(ctx)
	if err == nil && c.maybe {
		// Our marker says whether a multi of ours counted. Absent,
		// it may have gone with the latch meanwhile: the multi sent
		// next, built from the read above, then fails its check or
		// its version, and the read after it shows the latch gone.
		var counted bool
		if counted, _, err = l.client.Exists(ctx, c.mine); err == nil && counted {
			// Counted by a multi whose reply was lost, or resent.
			l.counted(ctx, c.mine, s.exists && s.remaining <= 0)
			return true, stop, nil
		}
	}
	if err != nil {
		return false, pause, err
	}
	switch {
	case s.exists && s.gen == "":
		// Never a latch (see TrySetCount): not ours to count or delete.
		return false, stop, fmt.Errorf("%w: count %d and no %s child", zkrecipes.ErrBadData, s.remaining, genPrefix)
	case c.maybe && s.exists && s.gen != c.sentGen:
		// Another latch at the path: ours may have counted on the
		// one before it, which finished since. Counting on this one
		// too would count the call twice.
		return false, stop, errors.New("the latch was replaced while the count-down's outcome was unknown")
	case !s.exists || s.remaining <= 0:
		if s.exists {
			_ = l.finish(ctx) // best effort: the next caller finishes it otherwise
		}
		if c.maybe {
			// Gone or at zero without our child: ours was never
			// applied, or applied and then deleted with the latch.
			return false, stop, errors.New("the latch finished while the count-down's outcome was unknown")
		}
		return false, stop, nil
	}
	return c.count(ctx, s)
}

// count sends the multi that counts the latch s down and makes our cd-
// child, at most once at a time: it checks the latch's gen- child and
// sets the count at the version read, so a resend cannot count twice.
func (c *downCall) count(ctx context.Context, s state) (bool, next, error) {
	l := c.l
	c.sentGen = s.gen
	_, err := l.client.MultiOnce(ctx,
		&zk.CheckVersionRequest{Path: framework.Join(l.path, s.gen), Version: -1},
		&zk.CreateRequest{Path: c.mine, Data: l.id},
		&zk.SetDataRequest{Path: l.path, Data: encode(s.remaining - 1), Version: s.version})
	var me *framework.MultiOpError
	switch {
	case err == nil:
		l.remember("", s.gen)
		l.counted(ctx, c.mine, s.remaining == 1)
		return true, stop, nil
	case errors.As(err, &me) && me.Index == 0 && errors.Is(me.Err, zk.ErrNoNode):
		// The latch this handle knew finished: learn the one there.
		l.remember(s.gen, "")
		return false, again, nil
	case errors.As(err, &me) && me.Index == 1 && errors.Is(me.Err, zk.ErrNodeExists),
		errors.As(err, &me) && me.Index == 2 && errors.Is(me.Err, zk.ErrBadVersion):
		// Ours was applied already, or another count-down went
		// first: the next read tells which.
		return false, again, nil
	case me != nil:
		return false, stop, err
	}
	if sent(err) {
		c.maybe = true
	}
	return false, pause, err
}

// counted ends a call that knows it counted: the latch is deleted if it is
// at zero, its marker with it; else the marker alone, which kept a resend
// of its multi from counting twice and told a call that lost a reply that
// it counted, and is of no more use. Both are best effort: a latch at
// zero is finished by the next caller, and a marker left behind (the
// client closed first) goes with the latch.
func (l *Countdown) counted(ctx context.Context, marker string, zero bool) {
	if zero {
		_ = l.finish(ctx)
		return
	}
	// Sent, not awaited: ZooKeeper applies it before whatever this
	// client sends next, and the client sends it again if the link
	// fails. Every copy of the multi that made the marker named a data
	// version the latch has left, so none can apply after this.
	_ = l.client.Delete(ctx, marker, -1, framework.InBackground())
}

// remember records that the handle's latch is now gen, if it was old
// ("": whatever it was).
func (l *Countdown) remember(old, gen string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old == "" || l.gen == old {
		l.gen = gen
	}
}
