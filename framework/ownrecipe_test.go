package framework_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// firstCome is a recipe a user could write with this module's public
// packages alone, as Curator's users write theirs on CuratorFramework:
// whoever makes the node at path first holds it (no queue, no fairness),
// and learns the moment that can no longer be trusted. It uses what the
// module's own recipes use: the client's protected create and owner
// checks, engine.Trust before a hold is handed out, and engine.Follow, which
// watches the node and the session's loss signal under the client's error
// policy and deletes the node, bound to its session, at Release.
type firstCome struct {
	c    *framework.Client
	path string
}

func (l firstCome) Acquire(ctx context.Context) (*hold.Hold, error) {
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
			return l.follow(ctx, s.ID, st.Czxid)
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

// follow hands the node out as a hold, under a session Trust vouches for.
func (l firstCome) follow(ctx context.Context, owner, czxid int64) (*hold.Hold, error) {
	s, err := engine.Trust(ctx, l.c, owner, l.path)
	if err != nil {
		_ = engine.Leave(l.c, l.path, owner)
		return nil, err
	}
	n := engine.Follow(l.c, engine.Grant{Path: l.path, Token: czxid, Session: s}, engine.WithRecipe("first come", l.path))
	h, err := n.NewHold(func(*hold.Hold) error { return n.Release() })
	if err != nil {
		return nil, errors.Join(err, n.Release())
	}
	return h, nil
}

// A recipe built on the public packages alone stays exclusive when its
// holder's link is cut: the holder is told (at 2/3 of the session timeout)
// before the server expires its session and deletes the node, and so
// before the next contender holds.
func TestARecipeOfYourOwnOnThePublicPackagesStaysExclusiveUnderACut(t *testing.T) {
	cl := zktest.Standalone(t)
	a, p := dialFault(t, cl)
	b := observer(t, cl)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	held, err := firstCome{a, "/own/lock"}.Acquire(ctx)
	require.NoError(t, err)
	type grant struct {
		h   *hold.Hold
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
	case <-held.Done():
		lostAt = time.Now()
	case <-time.After(30 * time.Second):
		t.Fatal("the holder was never told")
	}
	g := <-granted
	require.NoError(t, g.err)
	assert.True(t, lostAt.Before(g.at), "granted %v before the holder was told", lostAt.Sub(g.at))
	select {
	case <-g.h.Done():
		t.Fatal("the new holder's hold is not trusted")
	default:
	}
	require.NoError(t, g.h.Release())
	p.Heal()
	assert.ErrorIs(t, held.Release(), zkrecipes.ErrHoldLost, "a lost hold still releases, and says it was lost")
}
