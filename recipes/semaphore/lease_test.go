package semaphore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// A lease its holder forgets is returned by its lease time: the waiter
// behind it gets in, with the forgetful holder told first.
func TestLeaseTimeReturnsAForgottenLease(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	leased := newSem(t, c, "/sem/lease", 1, semaphore.WithLeaseTime(500*time.Millisecond))
	other := newSem(t, newClient(t, cl.Addrs()), "/sem/lease", 1)

	got, err := leased.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	h := got[0]
	end, ok := h.Expiry()
	require.True(t, ok)
	lost := make(chan time.Time, 1)
	go func() { <-h.Done(); lost <- time.Now() }()

	next, err := other.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	granted := time.Now()
	at := <-lost
	assert.False(t, at.Before(end))
	assert.True(t, at.Before(granted))
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrLeaseExpired)
	assert.ErrorIs(t, h.Release(), zkrecipes.ErrLeaseExpired)
	assert.ErrorIs(t, h.Extend(time.Second), zkrecipes.ErrReleased)
	require.NoError(t, next[0].Release())
	waitNodes(t, c, "/sem/lease/leases", 0)

	_, err = semaphore.New(c, "/sem/lease", 1, semaphore.WithLeaseTime(0))
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"negative lease time": testkit.Fails(func() error {
			_, err := semaphore.New(c, "/sem/lease", 1, semaphore.WithLeaseTime(-time.Second))
			return err
		}, zkrecipes.ErrInvalidArgument),
	})
}

// Extend keeps a lease past its first lease time.
func TestExtendKeepsALease(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	leased := newSem(t, c, "/sem/extend", 2, semaphore.WithLeaseTime(300*time.Millisecond))
	got, err := leased.Acquire(ctxT(t, 10*time.Second), 2)
	require.NoError(t, err)
	first, _ := got[0].Expiry()
	require.NoError(t, got[0].Extend(5*time.Second))
	// The first lease time passing is what is tested: only the clock tells.
	time.Sleep(time.Until(first) + 300*time.Millisecond)
	assert.NoError(t, got[0].Err())
	testkit.WaitClosed(t, got[1].Done(), 5*time.Second, "the unextended lease's end")
	assert.ErrorIs(t, got[1].Err(), zkrecipes.ErrLeaseExpired)
	waitNodes(t, c, "/sem/extend/leases", 1)
	require.NoError(t, got[0].Release())
	assert.ErrorIs(t, got[1].Release(), zkrecipes.ErrHoldLost)
	waitNodes(t, c, "/sem/extend/leases", 0)
}
