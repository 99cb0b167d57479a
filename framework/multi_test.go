package framework_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// rawZK is a plain go-zookeeper client of the server c is connected to, to
// send what the framework refuses and see what the server does with it.
func rawZK(t *testing.T, c *framework.Client) *zk.Conn {
	t.Helper()
	z, _, err := zk.Connect([]string{c.Server()}, 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(z.Close)
	require.Eventually(t, func() bool { return z.State() == zk.StateHasSession }, waitFor, 10*time.Millisecond)
	return z
}

// The evidence for refusing container and TTL creates in a multi (ZooKeeper
// 3.8 with go-zookeeper v1.0.4): the server applies a container create sent
// inside a multi, as a container, but answers it with a result go-zookeeper
// cannot read: Multi reports an error (zk.ErrAPIError) for a multi that was
// applied, all of it, and the results of the ops after it are lost. A
// caller trusting "all or none" would take it for none. A TTL create fails.
func TestServerAppliesAContainerCreateInAMultiButItsReplyCannotBeRead(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	z := rawZK(t, c)
	open := zk.WorldACL(zk.PermAll)
	res, err := z.Multi(
		&zk.CreateRequest{Path: "/plain", Acl: open},
		&zk.CreateRequest{Path: "/viaMulti", Acl: open, Flags: zk.FlagContainer},
		&zk.CreateRequest{Path: "/after", Acl: open},
	)
	t.Logf("multi: %v, results %+v", err, res)
	require.ErrorIs(t, err, zk.ErrAPIError, "the reply was readable after all")
	assert.Len(t, res, 1, "results after the container's")
	for _, p := range []string{"/plain", "/viaMulti", "/after"} {
		assert.True(t, exists(t, c, p), "%s: the multi that reported an error was applied", p)
	}
	// It is a real container: once it has had a child and lost it, the
	// server reaps it.
	mustCreate(t, c, "/viaMulti/kid", nil)
	require.NoError(t, c.Delete(testCtx(t), "/viaMulti/kid", -1))
	requireGone(t, c, "/viaMulti")
}

func TestServerRefusesATTLCreateInAMulti(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	z := rawZK(t, c)
	for _, flags := range []int32{zk.FlagTTL, zk.FlagPersistentSequentialWithTTL} {
		_, err := z.Multi(&zk.CreateRequest{Path: "/ttl", Acl: zk.WorldACL(zk.PermAll), Flags: flags})
		t.Logf("flags %d: %v", flags, err)
		assert.Error(t, err, "flags %d: the server took a TTL create in a multi", flags)
		assert.False(t, exists(t, c, "/ttl"))
	}
}

// The evidence for sending fenced writes at most once: Multi, like every
// write, is resent under the retry policy after a lost reply, and a multi
// with no op that conflicts with itself (here a sequential create) is
// applied twice.
func TestMultiResentAfterALostReplyIsAppliedTwice(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	obs := rawObserver(t, cl)
	mustCreate(t, obs, "/log", nil)

	p.DropReplies()
	out := make(chan error, 1)
	go func() {
		_, err := c.Multi(testCtx(t), &zk.CreateRequest{Path: "/log/e-", Flags: zk.FlagSequence})
		out <- err
	}()
	require.Eventually(t, func() bool {
		kids, _, err := obs.Children(testCtx(t), "/log")
		return err == nil && len(kids) == 1
	}, waitFor, 10*time.Millisecond, "the server did not apply the multi")
	p.Heal()
	require.NoError(t, <-out, "the resent multi")
	kids, _, err := obs.Children(testCtx(t), "/log")
	require.NoError(t, err)
	assert.Len(t, kids, 2, "one multi call, applied twice: %v", kids)
}
