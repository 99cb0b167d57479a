package mutex_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// Extend and a reentrant acquire racing the lease's end: either the lease
// goes on (nil, and the hold stays trusted, its node in place) or it ended
// (an error wrapping zkrecipes.ErrLeaseExpired), never nil for a hold whose
// signal fires at that end.
func TestExtendAndReentrantAcquireRacingTheLeaseEnd(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	obs := newClient(t, cl.Addrs())
	m := newMutex(t, c, "/locks/lease-extend-race", mutex.WithLeaseTime(30*time.Millisecond))
	var won, lost int
	for i := range 80 {
		h, err := m.Acquire(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		end, _ := h.Expiry()
		margin := time.Duration(i%8-4) * 40 * time.Microsecond
		for time.Until(end.Add(margin)) > 0 {
		}
		var again error
		if i%2 == 0 {
			again = h.Extend(time.Second)
		} else {
			var h2 interface {
				Err() error
				Token() int64
			}
			h2, again = m.Acquire(ctxT(t, 10*time.Second))
			if again == nil {
				assert.NoError(t, h2.Err())
			}
			if again == nil && errors.Is(h.Err(), zkrecipes.ErrLeaseExpired) {
				// The lease ended first and gave the lock back: the same
				// goroutine took it again, as a new hold.
				assert.Greater(t, h2.Token(), h.Token(), "round %d", i)
				lost++
				for {
					if err := m.Release(); errors.Is(err, zkrecipes.ErrNotHeld) {
						break
					}
				}
				waitNodes(t, obs, "/locks/lease-extend-race", 0)
				continue
			}
		}
		if again == nil {
			won++
			time.Sleep(10 * time.Millisecond) // past the first end, within the renewed one (30ms for a reentrant acquire)
			assert.NoError(t, h.Err(), "round %d: extended, then lost", i)
			assert.Len(t, nodes(t, obs, "/locks/lease-extend-race"), 1)
		} else {
			lost++
			assert.ErrorIs(t, again, zkrecipes.ErrLeaseExpired, "round %d", i)
			assert.ErrorIs(t, h.Err(), zkrecipes.ErrLeaseExpired)
		}
		for {
			if err := m.Release(); errors.Is(err, zkrecipes.ErrNotHeld) {
				break
			}
		}
		waitNodes(t, obs, "/locks/lease-extend-race", 0)
	}
	t.Logf("extended %d, ended first %d", won, lost)
}
