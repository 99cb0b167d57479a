package framework_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A delete sent InBackground whose request cannot be written still
// lands. The link is reset under go-zookeeper's send loop, and the error is
// the socket's own ("write: connection reset by peer", "use of closed
// network connection"), not zk.ErrConnectionClosed: when retry.Retryable
// and deleteUnfinished did not know it, the delete was neither retried nor
// handed to the background deleter. The Delete had already returned nil
// (its trace fires just before the write), so a lock's Release
// (engine.Leave) reported success while its node stayed for as long as the
// session lived, and every waiter behind it waited for ever: rule 4 (no
// orphans). The session here survives the cut.
func TestDeleteInBackgroundWhoseWriteFailsUnderACutStillDeletes(t *testing.T) {
	cl := zktest.Standalone(t)
	c, p := dialFault(t, cl)
	obs := observer(t, cl)
	_, err := obs.Create(t.Context(), "/wr", nil)
	require.NoError(t, err)
	const n = 400
	for round := range 15 {
		dir := fmt.Sprintf("/wr/r%d", round)
		_, err := obs.Create(t.Context(), dir, nil)
		require.NoError(t, err)
		ops := make([]any, 0, n)
		for i := range n {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/n%04d", dir, i)})
		}
		_, err = obs.Multi(t.Context(), ops...)
		require.NoError(t, err)
		_, err = c.WaitConnected(t.Context())
		require.NoError(t, err)

		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				defer cancel()
				// nil: the delete is on its way, or goes on in the background.
				_ = c.Delete(ctx, fmt.Sprintf("%s/n%04d", dir, i), -1, framework.InBackground())
			}()
		}
		close(start)
		time.Sleep(time.Duration(round%5) * time.Millisecond)
		p.Cut()
		wg.Wait()

		// The same session comes back at once: every delete must land.
		deadline := time.Now().Add(15 * time.Second)
		var left []string
		for time.Now().Before(deadline) {
			left, _, err = obs.Children(t.Context(), dir)
			require.NoError(t, err)
			if len(left) == 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		require.Empty(t, left, "round %d: the Delete returned, the session lives, and these nodes stay: %v", round, left)
		require.NoError(t, c.Drain(t.Context()))
	}
}

var _ = zkrecipes.ErrDeferred
