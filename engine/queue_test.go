package engine_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A deep queue of one process hands over without listing the queue again:
// a waiter whose predecessor was granted by this client with nothing ahead
// of it knows, when that node goes, that nothing is ahead of it either. A
// waiter whose predecessor gave up instead must list again, and must not
// hold while someone ahead still does. (Issue 19: each handoff in a queue
// of 10,000 listed up to 10,000 names.)
func TestDeepQueueHandsOverWithoutListingAgainButNotPastAWaiterWhoGaveUp(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := dial(t, cl.Addrs())
	holder := dial(t, cl.Addrs())
	p := cl.NewProxy() // the waiters' wire: their listings are counted there
	q := dial(t, p.Addrs())
	req := func(c *framework.Client) engine.Request {
		return engine.Request{Client: c, Dir: "/deep", Name: "lock-", Driver: engine.First(1)}
	}
	ctx := testkit.Ctx(t, 60*time.Second)
	held, err := engine.Enter(ctx, req(holder))
	require.NoError(t, err)
	watches := p.RequestsOf(zktest.OpGetData)

	const n, quitter = 12, 5
	var (
		holding atomic.Int32
		mu      sync.Mutex
		order   []int
		wg      sync.WaitGroup
	)
	quit, cancelQuitter := context.WithCancel(ctx)
	defer cancelQuitter()
	for i := range n {
		wctx := ctx
		if i == quitter {
			wctx = quit
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := engine.Enter(wctx, req(q))
			if i == quitter {
				assert.ErrorIs(t, err, context.Canceled)
				return
			}
			if !assert.NoError(t, err) {
				return
			}
			assert.Equal(t, int32(1), holding.Add(1), "two hold at once")
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			holding.Add(-1)
			assert.NoError(t, engine.Leave(q, e.Path, e.Session.ID))
		}()
		// One at a time, so that each waiter's snapshot holds all before it.
		testkit.WaitChildren(t, obs, "/deep", i+2)
	}
	// Every waiter has listed the queue and watches its predecessor: a
	// listing from now on is one made again after a wake.
	require.Eventually(t, func() bool { return p.RequestsOf(zktest.OpGetData)-watches >= n },
		30*time.Second, time.Millisecond, "the waiters never set their watches")
	listings := p.RequestsOf(zktest.OpGetChildren, zktest.OpGetChildren2)
	cancelQuitter()
	testkit.WaitChildren(t, obs, "/deep", n) // the quitter's node is gone
	holding.Add(1)
	require.NoError(t, engine.Leave(holder, held.Path, held.Session.ID))
	holding.Add(-1)
	wg.Wait()

	want := []int{0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11}
	assert.Equal(t, want, order, "FIFO")
	// Only the quitter's successor lists again: the quitter was never granted.
	assert.Equal(t, int64(1), p.RequestsOf(zktest.OpGetChildren, zktest.OpGetChildren2)-listings, "handoffs that listed the queue again")
}
