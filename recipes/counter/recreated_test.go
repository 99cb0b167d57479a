package counter_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/counter"
)

// ZooKeeper's compare-and-set compares the data version only. If the node
// is deleted and made again (version 0 again) with another value between a
// try's read and its write, the versioned set applies to the new node: the
// "compare" compared with a value the node no longer held. Curator reports
// a success with a PreValue that was not the value it replaced; the set's
// reply carries the Stat whose Czxid shows it, and this does not.
func TestCompareAndSetAcrossADeleteAndRecreateIsNotASuccess(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	obs := newClient(t, cl.Addrs())
	const path = "/counters/aba"
	l := newLong(t, c, path)
	ok, err := l.Initialize(ctxT(t, 10*time.Second), 41) // version 0
	require.NoError(t, err)
	require.True(t, ok)
	var r counter.Result[int64]
	betweenReadAndWrite(t, p, func() { r, err = l.CompareAndSet(ctxT(t, 10*time.Second), 41, 42) },
		func() { recreate(t, obs, path, 7) })
	got := rawLong(t, obs, path)
	assert.ErrorIs(t, err, zkrecipes.ErrRecreated)
	if err == nil && r.Succeeded {
		t.Errorf("CompareAndSet(41, 42) reported success with PreValue %d, but the node held 7 when it was written (now %d)", r.PreValue, got)
	}
}

// The same for an increment: it is not reported as one from the value read
// before the node was made again.
func TestIncrementAcrossADeleteAndRecreateIsNotASuccessFromTheOldValue(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	obs := newClient(t, cl.Addrs())
	const path = "/counters/aba-inc"
	l := newLong(t, c, path)
	ok, err := l.Initialize(ctxT(t, 10*time.Second), 41)
	require.NoError(t, err)
	require.True(t, ok)
	var r counter.Result[int64]
	betweenReadAndWrite(t, p, func() { r, err = l.Increment(ctxT(t, 10*time.Second)) },
		func() { recreate(t, obs, path, 7) })
	got := rawLong(t, obs, path)
	assert.ErrorIs(t, err, zkrecipes.ErrRecreated)
	if err == nil && r.Succeeded {
		assert.Equal(t, r.PostValue, got)
		assert.Equal(t, r.PreValue+1, r.PostValue)
		assert.Equal(t, int64(8), got, "an increment of a node holding 7 must leave 8 (it left %d: the 7 was lost)", got)
	}
}

// recreate deletes the node at path and makes it again holding the long
// n, at data version 0 again.
func recreate(t *testing.T, c *framework.Client, path string, n int64) {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	require.NoError(t, c.Delete(ctx, path, -1))
	_, err := c.Create(ctx, path, binary.BigEndian.AppendUint64(nil, uint64(n)))
	require.NoError(t, err)
}

// Swap over a node of the wrong length writes nothing: the value it would
// replace is not a long, and zkrecipes.ErrBadData says so. (Before, the
// write went through and the caller was told only of the bad data.)
func TestSwapOverDataThatIsNotALongWritesNothing(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	const path = "/counters-bad-swap"
	_, err := c.Create(ctxT(t, 10*time.Second), path, []byte{1, 2, 3})
	require.NoError(t, err)
	l := newLong(t, c, path)
	r, err := l.Swap(ctxT(t, 10*time.Second), 5)
	require.ErrorIs(t, err, zkrecipes.ErrBadData)
	assert.False(t, r.Succeeded)
	data, _ := raw(t, c, path)
	assert.Equal(t, []byte{1, 2, 3}, data, "Swap wrote over data that is not a long")
}
