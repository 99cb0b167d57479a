package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
)

// A leader that closes its client (on a fatal error, say) from its Func:
// the client's Close returns, it does not wait for the Func that called it.
func TestClientCloseInsideFuncReturns(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	closed := make(chan error, 1)
	s, err := leader.NewSelector(c, "/lifecycle/close-in-func", func(context.Context, *hold.Hold) error {
		closed <- c.Close()
		return nil
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Start(context.Background()))
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("the client's Close, called from a selector's Func, never returned")
	}
}

// A Requeue waiting for its turn ends when the client closes: nothing
// would ever queue it.
func TestRequeueReturnsAfterClientClose(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	leading := make(chan struct{})
	s, err := leader.NewSelector(c, "/lifecycle/requeue", func(ctx context.Context, _ *hold.Hold) error {
		close(leading)
		<-ctx.Done()
		return nil
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Start(context.Background()))
	<-leading
	done := make(chan error, 1)
	go func() { done <- s.Requeue(context.Background()) }()
	require.NoError(t, c.Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, zkrecipes.ErrClosed)
	case <-time.After(15 * time.Second):
		t.Fatal("Requeue still waits after its client closed")
	}
}

// An Await during a Start waits for it instead of failing with
// ErrNotStarted; it fails with it once the Start has failed.
func TestAwaitDuringStartWaitsForIt(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Proxy().Addrs())
	l, err := leader.NewLatch(c, "/lifecycle/await-during-start")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	observer := newClient(t, cl.DirectAddrs())
	// The create reaches the server at once, its reply later: the node
	// seen on the server means a Start that has not returned. The path
	// is made first, so that the node is the Start's first request.
	_, err = observer.Create(context.Background(), "/lifecycle/await-during-start", nil, framework.WithParentContainers())
	require.NoError(t, err)
	cl.Proxy().DelayReplies(800 * time.Millisecond)
	started := make(chan error, 1)
	go func() { started <- l.Start(context.Background()) }()
	require.Eventually(t, func() bool {
		ids, err := leader.Participants(context.Background(), observer, "/lifecycle/await-during-start")
		return err == nil && len(ids) == 1
	}, 10*time.Second, 5*time.Millisecond)
	select {
	case err := <-started:
		t.Fatalf("Start returned (%v) before Await was called: the reply delay did not hold it", err)
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	term, err := l.Await(ctx)
	require.NoError(t, err)
	require.NoError(t, <-started)
	require.NoError(t, term.Release())
}

// A leader that closes its own selector from its Func (it is done for
// good, say): the selector's Close returns, it does not wait for the Func
// that called it, and the leadership is given up once the Func returns.
// The same with the leader's link dead when it closes: the Close still
// returns at once (the release waits on nothing the dead link holds up),
// and once the link is back the node is gone.
func TestSelectorCloseInsideFuncReturns(t *testing.T) {
	for _, deadLink := range []bool{false, true} {
		t.Run(map[bool]string{false: "link up", true: "dead link"}[deadLink], func(t *testing.T) {
			cl := zktest.Standalone(t)
			p := cl.NewProxy()
			c := newClient(t, p.Addrs())
			obs := newClient(t, cl.Addrs())
			const path = "/lifecycle/selector-close-in-func"
			closed := make(chan error, 1)
			var s *leader.Selector
			s, err := leader.NewSelector(c, path, func(context.Context, *hold.Hold) error {
				if deadLink {
					p.Blackhole()
				}
				closed <- s.Close()
				return nil
			})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			require.NoError(t, s.Start(context.Background()))
			select {
			case err := <-closed:
				require.NoError(t, err)
			case <-time.After(15 * time.Second):
				t.Fatal("the selector's Close, called from its own Func, never returned")
			}
			p.Heal()
			require.Eventually(t, func() bool {
				kids, _, err := obs.Children(context.Background(), path)
				return err == nil && len(kids) == 0
			}, 30*time.Second, 10*time.Millisecond, "the selector's node stayed after its Close")
		})
	}
}
