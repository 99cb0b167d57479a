package persistent_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/persistent"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(thawEnv); spec != "" {
		runThawHelper(spec)
		return
	}
	os.Exit(zktest.Main(m))
}

func newClient(t *testing.T, addrs []string, opts ...framework.Option) *framework.Client {
	return testkit.Client(t, addrs, opts...)
}

func ctxT(t *testing.T, d time.Duration) context.Context { return testkit.Ctx(t, d) }

// started returns a started Node, closed when t ends.
func started(t *testing.T, c *framework.Client, path string, data []byte, opts ...persistent.Option) *persistent.Node {
	t.Helper()
	n, err := persistent.New(c, path, data, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close() })
	require.NoError(t, n.Start(ctxT(t, 30*time.Second)))
	return n
}

// onServer reads the node as the server has it (nil stat if missing).
func onServer(t *testing.T, c *framework.Client, path string) ([]byte, *zk.Stat) {
	t.Helper()
	data, st, err := c.Get(ctxT(t, 10*time.Second), path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	require.NoError(t, err)
	return data, st
}

// waitInPlace waits until n is in place with a node newer than after
// (a czxid), holding data on the server, and returns its status.
func waitInPlace(t *testing.T, n *persistent.Node, c *framework.Client, after int64, data string) persistent.Status {
	t.Helper()
	var st persistent.Status
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st = n.Status()
		if !assert.True(ct, st.InPlace, "status %+v", st) {
			return
		}
		assert.Greater(ct, st.Czxid, after)
		got, stat := onServer(t, c, st.Path)
		if assert.NotNil(ct, stat, "%s missing on the server", st.Path) {
			assert.Equal(ct, data, string(got))
			assert.Equal(ct, st.Czxid, stat.Czxid)
		}
	}, 60*time.Second, 10*time.Millisecond)
	assert.NoError(t, n.Err())
	return st
}

// waitNotInPlace waits until n says it is not in place, for reason.
func waitNotInPlace(t *testing.T, n *persistent.Node, reason error) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		err := n.Err()
		assert.ErrorIs(ct, err, persistent.ErrNotInPlace)
		assert.ErrorIs(ct, err, reason)
	}, 60*time.Second, 10*time.Millisecond)
}
