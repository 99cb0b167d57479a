package counter_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/counter"
)

// Get reads 0 (a Value: nothing) from a missing or empty node, so a loop
// of Get then CompareAndSet(read, next) must make progress there. Curator
// has the trap: its compareAndSet never creates the node, and compares 8
// zero bytes with none.
func TestGetThenCompareAndSetReachesItsTargetFromAMissingOrEmptyNode(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	for _, start := range []string{"missing", "empty"} {
		prepare := func(t *testing.T, path string) {
			if start == "empty" {
				_, err := c.Create(ctxT(t, 10*time.Second), path, nil, framework.WithParents())
				require.NoError(t, err)
			}
		}
		t.Run(start+"/long", func(t *testing.T) {
			path := "/cas/" + start + "/long"
			prepare(t, path)
			casLoop(t, newLong(t, c, path), 5)
			assert.Equal(t, int64(5), rawLong(t, c, path))
		})
		t.Run(start+"/integer", func(t *testing.T) {
			path := "/cas/" + start + "/integer"
			prepare(t, path)
			n, err := counter.NewInteger(c, path)
			require.NoError(t, err)
			t.Cleanup(func() { _ = n.Close() })
			casLoop(t, n, 5)
			data, _ := raw(t, c, path)
			assert.Equal(t, []byte{0, 0, 0, 5}, data)
		})
		t.Run(start+"/value", func(t *testing.T) {
			path := "/cas/" + start + "/value"
			prepare(t, path)
			v, err := counter.NewBytes(c, path)
			require.NoError(t, err)
			t.Cleanup(func() { _ = v.Close() })
			for range 10 {
				r, err := v.Get(ctxT(t, 10*time.Second))
				require.NoError(t, err)
				if len(r.PostValue) == 5 {
					break
				}
				_, err = v.CompareAndSet(ctxT(t, 10*time.Second), r.PostValue, append(bytes.Clone(r.PostValue), 'x'))
				require.NoError(t, err)
			}
			data, _ := raw(t, c, path)
			assert.Equal(t, []byte("xxxxx"), data, "a Get then CompareAndSet loop made no progress")
		})
	}
}

// number is what a Long and an Integer have in common.
type number[T int32 | int64] interface {
	Get(ctx context.Context) (counter.Result[T], error)
	CompareAndSet(ctx context.Context, expectedValue, newValue T) (counter.Result[T], error)
}

// casLoop counts n up to target by Get then CompareAndSet(read, read+1),
// and fails t if twice as many tries as needed do not get there.
func casLoop[T int32 | int64](t *testing.T, n number[T], target T) {
	t.Helper()
	for range 2 * int(target) {
		r, err := n.Get(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		if r.PostValue == target {
			return
		}
		_, err = n.CompareAndSet(ctxT(t, 10*time.Second), r.PostValue, r.PostValue+1)
		require.NoError(t, err)
	}
	r, err := n.Get(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.Equal(t, target, r.PostValue, "a Get then CompareAndSet loop made no progress")
}

// CompareAndSet(0, n) on a missing node loses to a create by someone else
// between its read and its own create: nothing of it is written.
func TestCompareAndSetOnAMissingNodeLosesToAConcurrentCreate(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	rival := newLong(t, newClient(t, cl.Addrs()), "/cas/raced")
	l := newLong(t, c, "/cas/raced")
	var r counter.Result[int64]
	var err error
	betweenReadAndWrite(t, p, func() { r, err = l.CompareAndSet(ctxT(t, 10*time.Second), 0, 5) }, func() {
		created, err := rival.Initialize(ctxT(t, 10*time.Second), 9)
		require.NoError(t, err)
		require.True(t, created)
	})
	require.NoError(t, err)
	assert.False(t, r.Succeeded, "the rival made the node first")
	assert.Equal(t, int64(0), r.PreValue)
	assert.Equal(t, int64(9), rawLong(t, c, "/cas/raced"))
}

// CompareAndSet(0, n) on a missing node creates it, sent at most once: a
// lost reply is zkrecipes.ErrOutcomeUnknown, and the node is made once.
func TestCompareAndSetCreatingTheNodeWhoseReplyIsLostIsAnUnknownOutcome(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	obs := newClient(t, cl.Addrs())
	const path = "/cas/lost-create"
	_, err := obs.Create(ctxT(t, 10*time.Second), "/cas", nil)
	require.NoError(t, err)
	l := newLong(t, newClient(t, p.Addrs()), path)
	p.DropRepliesFrom(zktest.OpMulti) // the create: its read goes through

	type out struct {
		r   counter.Result[int64]
		err error
	}
	got := make(chan out, 1)
	go func() {
		r, err := l.CompareAndSet(ctxT(t, 30*time.Second), 0, 5)
		got <- out{r, err}
	}()
	require.Eventually(t, func() bool { _, ok := raw(t, obs, path); return ok },
		10*time.Second, 10*time.Millisecond, "the server did not apply the create")
	p.Heal()
	var o out
	select {
	case o = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("CompareAndSet did not return")
	}
	require.ErrorIs(t, o.err, zkrecipes.ErrOutcomeUnknown)
	assert.False(t, o.r.Succeeded)
	assert.Equal(t, int64(0), o.r.PreValue)
	assert.Equal(t, int64(5), o.r.PostValue, "the value it may have written")
	assert.Equal(t, int64(5), rawLong(t, obs, path))
}
