package framework

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/zktest"
)

// Goroutines queueing by the hundred on one directory over one client share
// their listings, and each still sees its own node. Before, each sent its
// own: 300 listings of up to 300 names, and at ten thousand waiters the
// session's pings waited behind gigabytes of them until the link was
// judged dead.
func TestEnqueuesOnOneDirectoryShareListings(t *testing.T) {
	cl := zktest.Standalone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Dial(ctx, cl.Addrs())
	require.NoError(t, err)
	defer c.Close()

	received := func() int {
		out, err := zktest.FourLetter(cl.DirectAddrs()[0], "cons", 5*time.Second)
		require.NoError(t, err)
		m := regexp.MustCompile(`recved=(\d+),[^)]*sid=` + fmt.Sprintf("0x%x", c.Session().ID) + `\b`).FindStringSubmatch(out)
		require.NotNil(t, m, out)
		n, _ := strconv.Atoi(m[1])
		return n
	}
	// The directory exists: n goroutines racing to make it would send
	// requests of their own.
	_, err = c.Create(ctx, "/hot", nil)
	require.NoError(t, err)
	const n = 300
	before := received()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			q, err := c.Enqueue(ctx, "/hot/lock-", nil)
			if err == nil && !slices.Contains(q.Children, Base(q.Path)) {
				err = assert.AnError
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	requests := received() - before
	t.Logf("%d enqueues: %d requests, %d of them shared listings", n, requests, c.listers.sent.Load())
	assert.Less(t, requests, n+n/2, "the server got a listing per enqueue")
	c.listers.mu.Lock()
	assert.Empty(t, c.listers.dirs, "an idle directory keeps no state")
	c.listers.mu.Unlock()
}
