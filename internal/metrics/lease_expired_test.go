package metrics_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// A lease's end is counted once, as reason lease_expired; a hold lost first
// keeps its first reason and its lease's end is not counted again; a late
// Release counts nothing more.
func TestALeaseEndIsCountedOnceAsLeaseExpired(t *testing.T) {
	cl := zktest.Standalone(t)
	m := newMeters(t)
	p := cl.NewProxy()
	a := m.client(t, p.Addrs(), framework.WithSessionTimeout(testkit.CutSessionTimeout))
	ctx := testkit.Ctx(t, time.Minute)

	mu, err := mutex.New(a, "/lease/metrics", mutex.WithLeaseTime(300*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { mu.Close() })
	h, err := mu.Acquire(ctx)
	require.NoError(t, err)
	testkit.WaitClosed(t, h.Done(), 5*time.Second, "the lease's end")
	m.waitValue(t, 1, metrics.HoldLosses, kind("mutex"), reason("lease_expired"))
	require.ErrorIs(t, mu.Release(), zkrecipes.ErrLeaseExpired)
	assert.EqualValues(t, 1, m.value(t, metrics.HoldLosses, kind("mutex"), reason("lease_expired")))
	assert.Zero(t, m.value(t, metrics.HoldActive, kind("mutex")))

	// Lost to a cut first, then the lease ends (the session survives).
	lost, err := mutex.New(a, "/lease/metrics-lost", mutex.WithLeaseTime(10*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { lost.Close() })
	h2, err := lost.Acquire(ctx)
	require.NoError(t, err)
	end, _ := h2.Expiry()
	p.Blackhole()
	testkit.WaitClosed(t, h2.Done(), 10*time.Second, "the cut")
	p.Heal()
	m.waitValue(t, 1, metrics.HoldLosses, kind("mutex"), reason("suspended"))
	time.Sleep(time.Until(end) + 500*time.Millisecond) // the lease's end passing is the event
	testkit.WaitChildren(t, a, "/lease/metrics-lost", 0)
	assert.EqualValues(t, 1, m.value(t, metrics.HoldLosses, kind("mutex"), reason("lease_expired")), "a hold lost first was counted again at its lease's end")
	assert.EqualValues(t, 1, m.value(t, metrics.HoldLosses, kind("mutex"), reason("suspended")))
	require.ErrorIs(t, lost.Release(), zkrecipes.ErrHoldLost)
	assert.Zero(t, m.value(t, metrics.HoldActive, kind("mutex")))
}
