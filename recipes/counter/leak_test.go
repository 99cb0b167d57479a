package counter_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/counter"
	"github.com/zkrecipes/zkrecipes/retry"
)

// Operations own no goroutine after they return, promoted ones and those
// whose context ended included, and Close ends the promoted mutex's.
func TestNoGoroutineOutlivesOperationsAndClose(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	obs := newClient(t, cl.Addrs())
	rival := newLong(t, obs, "/counters/leak")
	before := testkit.LeakBase()
	func() {
		c := newClient(t, p.Addrs())
		l, err := counter.NewLong(c, "/counters/leak", counter.WithOptimisticRetry(retry.NTimes(0, 0)),
			counter.WithPromotedToLock("/counters/leak-lock", 5*time.Second, retry.NTimes(2, 0)))
		require.NoError(t, err)
		for range 3 {
			var r counter.Result[int64]
			finished(t, promote(t, p, rival, func() { r, err = l.Increment(ctxT(t, 10*time.Second)) }, func() {}))
			require.NoError(t, err)
			assert.Positive(t, r.Stats.PromotedTries)
		}
		_, err = l.Increment(testkit.Cancelled())
		assert.Error(t, err)
		require.NoError(t, l.Close())
		require.NoError(t, c.Close())
	}()
	assert.NoError(t, goleak.Find(before...))
}
