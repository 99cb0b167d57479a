package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A leader's term fences its latch node: the deposed leader's write does
// not commit.
func TestFencedWriteUnderATermCommitsOnlyWhileLeading(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	other := newClient(t, cl.Addrs())
	l := newLatch(t, c, "/latch/f", "a")
	require.NoError(t, l.Start(context.Background()))
	term, err := l.Await(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	_, err = term.Fenced(ctxT(t, 10*time.Second), &zk.CreateRequest{Path: "/t1"})
	require.NoError(t, err)
	require.NoError(t, other.Delete(ctxT(t, 10*time.Second), term.Path(), -1))
	_, err = term.Fenced(ctxT(t, 10*time.Second), &zk.CreateRequest{Path: "/t2"})
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)

	for p, want := range map[string]bool{"/t1": true, "/t2": false} {
		ok, _, err := other.Exists(ctxT(t, 10*time.Second), p)
		require.NoError(t, err)
		assert.Equal(t, want, ok, p)
	}
}
