package framework

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// Goroutines queueing by the hundred on one directory over one client share
// their listings, and each still sees its own node. Before, each sent its
// own: 300 listings of up to 300 names, and at ten thousand waiters the
// session's pings waited behind gigabytes of them until the link was
// judged dead.
func TestEnqueuesOnOneDirectoryShareListings(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Dial(ctx, p.Addrs())
	require.NoError(t, err)
	defer c.Close()

	// The directory exists: n goroutines racing to make it would send
	// requests of their own.
	_, err = c.Create(ctx, "/hot", nil)
	require.NoError(t, err)
	const n = 300
	creates, listings := p.RequestsOf(zktest.OpCreate), p.RequestsOf(zktest.OpGetChildren, zktest.OpGetChildren2)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q, err := c.Enqueue(ctx, "/hot/lock-", nil)
			if err == nil && !slices.Contains(q.Children, Base(q.Path)) {
				err = assert.AnError
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	creates = p.RequestsOf(zktest.OpCreate) - creates
	listings = p.RequestsOf(zktest.OpGetChildren, zktest.OpGetChildren2) - listings
	t.Logf("%d enqueues: %d creates, %d listings", n, creates, listings)
	assert.Equal(t, int64(n), creates)
	assert.Less(t, listings, int64(n/2), "the server got a listing per enqueue")
	c.listers.mu.Lock()
	assert.Empty(t, c.listers.dirs, "an idle directory keeps no state")
	c.listers.mu.Unlock()
}
