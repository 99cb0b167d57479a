package engine_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

func dial(t *testing.T, addrs []string) *framework.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := framework.Dial(ctx, addrs)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// A waiter whose session is replaced just before it sets its watch queues
// again at once, while the node it watches is still there. The watch is
// then set on the new session and never ends by itself; a waiter that
// took the new session's channels for its own would wait until the
// watched node changed. (The suspected hole of issue 14 §6.2.)
//
// The proxy holds the waiter's watch request; the test ends the session
// meanwhile, which drops the held request with the link, and the watch is
// set again on the new session.
func TestWaiterWhoseSessionIsReplacedBeforeItsWatchQueuesAgainAtOnce(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := dial(t, cl.Addrs())
	holder := dial(t, cl.Addrs())
	p := cl.NewProxy()
	waiterClient := dial(t, p.Addrs())
	req := func(c *framework.Client) engine.Request {
		return engine.Request{Client: c, Dir: "/q", Name: "lock-", Driver: engine.First(1)}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	held, err := engine.Enter(ctx, req(holder))
	require.NoError(t, err)

	// The waiter's first read is its watch on the holder's node.
	p.StallRequestsFrom(zktest.OpGetData)
	got := make(chan error, 1)
	go func() {
		e, err := engine.Enter(ctx, req(waiterClient))
		if err == nil {
			err = engine.Leave(waiterClient, e.Path, e.Session.ID)
		}
		got <- err
	}()
	require.Eventually(t, p.Stalled, 30*time.Second, time.Millisecond, "the waiter never set its watch")
	before, err := testkit.List(obs, "/q")
	require.NoError(t, err)
	require.Len(t, before, 2, "the holder's node and the waiter's")
	old := waiterClient.Session().ID
	zktest.ExpireSession(t, p, old) // heals the proxy when the session is gone
	require.Eventually(t, func() bool {
		s := waiterClient.Session()
		return s.ID != old && s.ID != 0
	}, 30*time.Second, 10*time.Millisecond, "no new session")
	// The holder's node is untouched, so only the waiter's own look at its
	// session can make it queue again.
	testkit.Requeued(t, obs, "/q", before)
	require.NoError(t, engine.Leave(holder, held.Path, held.Session.ID))
	require.NoError(t, <-got)
}
