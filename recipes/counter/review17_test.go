package counter_test

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/counter"
)

// review17: the compare-and-set compares the data version only. If the
// node is deleted and made again (version 0 again) with another value
// between a try's read and its write, the versioned set applies to the new
// node: the "compare" compared with a value the node no longer held, and
// the operation reports success with a PreValue that was not the value it
// replaced. (Curator has the same hole; the set's reply carries the Stat
// whose Czxid would show it, so at least it need not be reported as a
// clean success.)
func TestReview17CompareAndSetAcrossADeleteAndRecreateIsNotASuccess(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	obs := newClient(t, cl.Addrs())
	const path = "/counters/aba"
	l := newLong(t, c, path)
	ok, err := l.Initialize(ctxT(t, 10*time.Second), 41) // version 0
	require.NoError(t, err)
	require.True(t, ok)
	counter.BeforeWrite(l, once(func(*hold.Hold) {
		ctx := ctxT(t, 10*time.Second)
		require.NoError(t, obs.Delete(ctx, path, -1))
		_, err := obs.Create(ctx, path, binary.BigEndian.AppendUint64(nil, 7)) // version 0 again
		require.NoError(t, err)
	}))
	r, err := l.CompareAndSet(ctxT(t, 10*time.Second), 41, 42)
	got := rawLong(t, obs, path)
	if err == nil && r.Succeeded {
		t.Errorf("CompareAndSet(41, 42) reported success with PreValue %d, but the node held 7 when it was written (now %d)", r.PreValue, got)
	}
}

func TestReview17IncrementAcrossADeleteAndRecreateIsNotASuccessFromTheOldValue(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	obs := newClient(t, cl.Addrs())
	const path = "/counters/aba-inc"
	l := newLong(t, c, path)
	ok, err := l.Initialize(ctxT(t, 10*time.Second), 41)
	require.NoError(t, err)
	require.True(t, ok)
	counter.BeforeWrite(l, once(func(*hold.Hold) {
		ctx := ctxT(t, 10*time.Second)
		require.NoError(t, obs.Delete(ctx, path, -1))
		_, err := obs.Create(ctx, path, binary.BigEndian.AppendUint64(nil, 7))
		require.NoError(t, err)
	}))
	r, err := l.Increment(ctxT(t, 10*time.Second))
	got := rawLong(t, obs, path)
	if err == nil && r.Succeeded {
		assert.Equal(t, r.PostValue, got)
		assert.Equal(t, r.PreValue+1, r.PostValue)
		assert.Equal(t, int64(8), got, "an increment of a node holding 7 must leave 8 (it left %d: the 7 was lost)", got)
	}
}

// review17: zkrecipes.ErrBadData's doc says "Nothing was written". Long.TrySet over a
// node of the wrong length writes the new value (the write does not look
// at what it replaces) and then fails with zkrecipes.ErrBadData because PreValue
// does not decode: the caller is told of a corrupt node and not of a write
// that happened (Succeeded is lost behind the error).
func TestReview17TrySetOverCorruptDataThatWritesDoesNotSayNothingWasWritten(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	const path = "/counters-bad-tryset"
	_, err := c.Create(ctxT(t, 10*time.Second), path, []byte{1, 2, 3})
	require.NoError(t, err)
	l := newLong(t, c, path)
	r, err := l.TrySet(ctxT(t, 10*time.Second), 5)
	data, _ := raw(t, c, path)
	if errors.Is(err, zkrecipes.ErrBadData) {
		assert.Equal(t, []byte{1, 2, 3}, data, "zkrecipes.ErrBadData says nothing was written, but the node now holds % x", data)
	} else {
		require.NoError(t, err)
		assert.True(t, r.Succeeded)
		assert.Equal(t, int64(5), r.PostValue)
	}
}
