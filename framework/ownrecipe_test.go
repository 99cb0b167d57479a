package framework_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
)

// firstCome is a recipe a user could write with this module's public
// framework alone, as Curator's users write theirs on CuratorFramework:
// whoever makes the node at path first holds it (no queue, no fairness),
// and learns the moment that can no longer be trusted. It uses what the
// module's own recipes use: the session and its loss signal under the
// client's error policy, a watch on its own node, a delete bound to the
// session that made the node, the client's workers and its Close.
type firstCome struct {
	c    *framework.Client
	path string
}

// firstComeHold is one holding of a firstCome lock.
type firstComeHold struct {
	c       *framework.Client
	path    string
	session int64
	lost    chan struct{} // closed when the hold can no longer be trusted
	end     sync.Once
	stop    context.CancelFunc
}

func (h *firstComeHold) finish() { h.end.Do(func() { close(h.lost) }) }

// Release gives the lock back: the node goes, bound to the session that
// made it (a node of another session at the path is left alone).
func (h *firstComeHold) Release() error {
	h.stop()
	h.finish()
	err := h.c.DeleteOwned(context.Background(), h.path, h.session)
	if errors.Is(err, zkrecipes.ErrDeferred) {
		return nil // the client goes on with it
	}
	return err
}

func (l firstCome) Acquire(ctx context.Context) (*firstComeHold, error) {
	for {
		s, err := l.c.WaitConnected(ctx)
		if err != nil {
			return nil, err
		}
		_, err = l.c.Create(ctx, l.path, nil, framework.WithMode(framework.Ephemeral), framework.WithParentContainers())
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return nil, err
		}
		// Ours or not? A create retried after a lost reply says
		// NodeExists for a node it made itself: the owner tells.
		ok, st, watch, err := l.c.ExistsW(ctx, l.path)
		if err != nil {
			return nil, err
		}
		if ok && st.EphemeralOwner == s.ID {
			return l.follow(s), nil
		}
		if ok {
			select {
			case <-watch: // deleted (or changed): try again
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
}

// follow turns the node into a hold whose lost channel closes on the
// session's loss signal, on the node's deletion or change of hands, and at
// the client's Close, whichever comes first.
func (l firstCome) follow(s conn.Session) *firstComeHold {
	ctx, stop := context.WithCancel(context.Background())
	h := &firstComeHold{c: l.c, path: l.path, session: s.ID, lost: make(chan struct{}), stop: stop}
	remove := l.c.OnClose(h.finish)
	if !l.c.Go(func() {
		defer remove()
		defer h.finish()
		_, st, watch, err := l.c.GetW(ctx, l.path)
		if err != nil || st.EphemeralOwner != s.ID {
			return
		}
		select {
		case <-l.c.LossSignal(s):
		case <-watch:
		case <-ctx.Done():
		}
	}) {
		h.finish() // the client is closing
	}
	return h
}

// A recipe built on the public framework alone stays exclusive when its
// holder's link is cut: the holder is told (at 2/3 of the session timeout)
// before the server expires its session and deletes the node, and so
// before the next contender holds.
func TestARecipeOfYourOwnOnThePublicFrameworkStaysExclusiveUnderACut(t *testing.T) {
	cl := zktest.Standalone(t)
	a, p := dialFault(t, cl)
	b := observer(t, cl)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	held, err := firstCome{a, "/own/lock"}.Acquire(ctx)
	require.NoError(t, err)
	type grant struct {
		h   *firstComeHold
		at  time.Time
		err error
	}
	granted := make(chan grant, 1)
	go func() {
		h, err := firstCome{b, "/own/lock"}.Acquire(ctx)
		granted <- grant{h, time.Now(), err}
	}()
	select {
	case g := <-granted:
		t.Fatalf("granted to a second holder while the first holds: %v", g.err)
	case <-time.After(500 * time.Millisecond):
	}

	p.Blackhole() // a's session expires on the server: its node goes
	var lostAt time.Time
	select {
	case <-held.lost:
		lostAt = time.Now()
	case <-time.After(30 * time.Second):
		t.Fatal("the holder was never told")
	}
	g := <-granted
	require.NoError(t, g.err)
	assert.True(t, lostAt.Before(g.at), "granted %v before the holder was told", lostAt.Sub(g.at))
	select {
	case <-g.h.lost:
		t.Fatal("the new holder's hold is not trusted")
	default:
	}
	require.NoError(t, g.h.Release())
	p.Heal()
	require.NoError(t, held.Release(), "a lost hold still releases cleanly")
}
