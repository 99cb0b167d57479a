package mutex_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// A Release during a cut never leaves the lock taken. Release sends its
// delete InBackground and returns once the request is handed to the
// socket. If the link is reset under go-zookeeper's send loop, the write
// fails with the socket's own error ("broken pipe", "connection reset by
// peer"); when retry.Retryable and the guaranteed delete did not know it,
// the delete was dropped. Release said nil, the session lived on (the cut
// is short), and the lock node stayed: every other contender waited for as
// long as the releasing process ran (rule 4). Not run under the race
// detector (see below).
func TestReleaseDuringACutNeverLeavesTheLockTaken(t *testing.T) {
	testkit.SkipUnderRace(t) // 300 holds' watches set again at every reconnect
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	other := newClient(t, cl.Addrs())
	const n = 300
	for round := range 10 {
		ms := make([]*mutex.Mutex, n)
		holds := make([]interface{ Release() error }, n)
		for i := range n {
			ms[i] = newMutex(t, c, fmt.Sprintf("/wr/r%d/m%03d", round, i))
			h, err := ms[i].Acquire(ctxT(t, 10*time.Second))
			require.NoError(t, err)
			holds[i] = h
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() { defer wg.Done(); <-start; _ = holds[i].Release() }()
		}
		close(start)
		time.Sleep(time.Duration(round%4) * time.Millisecond)
		p.Cut()
		wg.Wait()
		_, err := c.WaitConnected(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		// Every lock must be free again: another client takes each one.
		for i := range n {
			m := newMutex(t, other, ms[i].Path())
			h, err := m.Acquire(ctxT(t, 15*time.Second))
			require.NoError(t, err, "round %d: %s stays taken after its Release, its session alive", round, ms[i].Path())
			require.NoError(t, h.Release())
		}
	}
}
