package metrics_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// docs/production.md: hold.active is "holds held and trusted now" and
// hold.losses counts "holds that stopped being trusted before their
// release" (alert on any). A hold lost to a cut while its holder does
// not wait on it is neither trusted nor active: the loss is counted when
// the signal fires, not at a Release that may come hours later.
func TestAnUnwatchedHoldLostToACutIsCountedWhenItIsLost(t *testing.T) {
	cl := zktest.Standalone(t)
	m := newMeters(t)
	p := cl.NewProxy()
	a := m.client(t, p.Addrs(), framework.WithSessionTimeout(3*time.Second))
	ctx := testkit.Ctx(t, time.Minute)

	mu, err := mutex.New(a, "/lazy/metrics")
	require.NoError(t, err)
	t.Cleanup(func() { mu.Close() })
	_, err = mu.Acquire(ctx)
	require.NoError(t, err)
	s := a.Session()
	require.EqualValues(t, 1, m.value(t, metrics.HoldActive, kind("mutex")))

	p.Blackhole()
	testkit.WaitClosed(t, s.Suspended, 5*time.Second, "the cut")
	p.Heal()
	assert.EventuallyWithT(t, func(ct *assert.CollectT) {
		got, err := m.get(metrics.HoldLosses, kind("mutex"), reason("suspended"))
		if assert.NoError(ct, err) {
			assert.EqualValues(ct, 1, got.value, "the loss, counted")
		}
		got, err = m.get(metrics.HoldActive, kind("mutex"))
		if assert.NoError(ct, err) {
			assert.EqualValues(ct, 0, got.value, "a lost hold is not active")
		}
	}, 5*time.Second, 20*time.Millisecond)
}
