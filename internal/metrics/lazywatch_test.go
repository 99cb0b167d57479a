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

// docs/production.md: hold.losses counts "holds that stopped being
// trusted before their release", when the hold learns it: a hold nobody
// waits on follows nothing while held (a lock per key), so a loss to a cut
// is counted at its next look (or its release), with the reason it had
// then (suspended, the cut), and the hold leaves hold.active then.
func TestAnUnwatchedHoldLostToACutIsCountedWhenItIsLearned(t *testing.T) {
	cl := zktest.Standalone(t)
	m := newMeters(t)
	p := cl.NewProxy()
	a := m.client(t, p.Addrs(), framework.WithSessionTimeout(testkit.CutSessionTimeout))
	ctx := testkit.Ctx(t, time.Minute)

	mu, err := mutex.New(a, "/lazy/metrics")
	require.NoError(t, err)
	t.Cleanup(func() { mu.Close() })
	h, err := mu.Acquire(ctx)
	require.NoError(t, err)
	s := a.Session()
	require.EqualValues(t, 1, m.value(t, metrics.HoldActive, kind("mutex")))

	p.Blackhole()
	testkit.WaitClosed(t, s.Suspended, 10*time.Second, "the cut")
	p.Heal()
	require.EqualValues(t, 1, m.value(t, metrics.HoldActive, kind("mutex")), "unlooked at: not learned yet")
	require.Error(t, h.Err(), "a look learns the loss")
	got, err := m.get(metrics.HoldLosses, kind("mutex"), reason("suspended"))
	require.NoError(t, err)
	assert.EqualValues(t, 1, got.value, "the loss, counted with the reason it had")
	assert.EqualValues(t, 0, m.value(t, metrics.HoldActive, kind("mutex")), "a lost hold is not active")
}
