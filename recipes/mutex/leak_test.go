package mutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// Acquires that time out or are cancelled while waiting leave no goroutine
// behind: before, each abandoned watch kept one until the watched node
// changed (200 timed-out acquires left 200).
func TestAbandonedWaitsLeaveNoGoroutine(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	// The holder is another process: its own goroutines are not counted.
	startHolder(t, cl.Addrs(), "/handles/abandoned", 10*time.Second)
	m := newMutex(t, newClient(t, cl.Addrs()), "/handles/abandoned")
	// A client that reconnects (a loaded machine can delay a ping reply)
	// starts new connection loops: they belong to live clients.
	before := testkit.LeakBase()

	for i := range 30 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		if i%2 == 1 {
			ctx, cancel = context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
		}
		_, err := m.Acquire(ctx)
		cancel()
		require.Error(t, err)
	}
	waitNodes(t, obs, "/handles/abandoned", 1) // only the holder's node is left
	assert.NoError(t, goleak.Find(before...), "goroutines left by abandoned waits")
}
