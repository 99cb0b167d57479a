package lagread_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/recipes/barrier"
)

// A gate set before Wait is called stands for that Wait, whichever server
// answers it: on a follower that has not applied the Set yet, Wait must
// still wait. (Wait asks its server whether the node exists, with no sync:
// the follower says no, and Wait returns at once.)
func TestBarrierWaitOnALaggingFollowerWaitsForAGateSetBeforeIt(t *testing.T) {
	e := newLaggingEnsemble(t)
	setter, err := barrier.New(e.Leader, "/lag/gate")
	require.NoError(t, err)
	waiter, err := barrier.New(e.Lagging, "/lag/gate")
	require.NoError(t, err)
	e.Lag(t)

	require.NoError(t, setter.Set(ctxT(t, 10*time.Second)))
	err = waiter.Wait(ctxT(t, time.Second))
	require.ErrorIs(t, err, context.DeadlineExceeded, "Wait returned while the gate it was called after stood")
}
