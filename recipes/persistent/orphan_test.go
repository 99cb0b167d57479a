package persistent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/persistent"
)

// Start gives up while its first create is on its way (held at the
// proxy); the create lands afterwards. Start leaves nothing behind all
// the same: the node it made is deleted.
func TestStartThatGivesUpDuringTheCreateLeavesNoNode(t *testing.T) {
	for name, opts := range map[string][]persistent.Option{
		"persistent": {persistent.Persistent()},
		"ephemeral":  nil,
	} {
		t.Run(name, func(t *testing.T) {
			cl := zktest.Standalone(t)
			p := cl.NewProxy()
			c := newClient(t, p.Addrs())
			observer := newClient(t, cl.Addrs())
			_, err := observer.Create(ctxT(t, 10*time.Second), "/pn/orphan", nil, framework.WithMode(framework.Persistent), framework.WithParents())
			require.NoError(t, err)
			n, err := persistent.New(c, "/pn/orphan/x", []byte("o"), opts...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = n.Close() })

			p.StallRequestsFrom(zktest.OpCreate)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			startErr := make(chan error, 1)
			go func() { startErr <- n.Start(ctx) }()
			require.Eventually(t, p.Stalled, 10*time.Second, time.Millisecond)
			cancel()
			// Start may wait for the create it gave up on: let it land.
			select {
			case err := <-startErr:
				assert.ErrorIs(t, err, context.Canceled)
				p.Release()
			case <-time.After(100 * time.Millisecond):
				p.Release()
				assert.ErrorIs(t, <-startErr, context.Canceled)
			}
			// The create has landed once a request sent after it is answered.
			_, _, err = c.Exists(ctxT(t, 10*time.Second), "/pn/orphan")
			require.NoError(t, err)
			require.NoError(t, c.Drain(ctxT(t, 10*time.Second)))
			_, stat := onServer(t, observer, "/pn/orphan/x")
			assert.Nil(t, stat, "a Start that gave up left its node behind")
		})
	}
}
