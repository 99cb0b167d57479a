package persistent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/persistent"
)

// Two members with the same id: the second waits for the first's node,
// and neither its failed Start nor its Close deletes that node.
func TestEphemeralNodeNeverDeletesAnotherSessionsNode(t *testing.T) {
	cl := zktest.Standalone(t)
	a := newClient(t, cl.Addrs())
	b := newClient(t, cl.Addrs())
	first := started(t, a, "/pn/same/member", []byte("first"))
	want := first.Status()

	second, err := persistent.New(b, "/pn/same/member", []byte("second"))
	require.NoError(t, err)
	err = second.Start(ctxT(t, 5*time.Second))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, persistent.ErrOtherOwner, "the error says why the node is not in place")
	require.NoError(t, b.Drain(ctxT(t, 10*time.Second)))
	data, stat := onServer(t, a, "/pn/same/member")
	require.NotNil(t, stat, "a failed Start deleted another session's node")
	assert.Equal(t, "first", string(data))
	assert.Equal(t, want.Czxid, stat.Czxid)

	startErr := make(chan error, 1)
	go func() { startErr <- second.Start(ctxT(t, 60*time.Second)) }()
	waitNotInPlace(t, second, persistent.ErrOtherOwner)
	require.NoError(t, second.Close())
	<-startErr
	require.NoError(t, b.Drain(ctxT(t, 10*time.Second)))
	_, stat = onServer(t, a, "/pn/same/member")
	require.NotNil(t, stat, "Close deleted another session's node")
	assert.Equal(t, want.Czxid, stat.Czxid)
	assert.Equal(t, a.Session().ID, stat.EphemeralOwner)
}

// A persistent (or TTL-mode) Node that finds an ephemeral node of another
// session at its path neither writes into it, nor takes it for in place,
// nor deletes it.
func TestPersistentNodeLeavesAnotherSessionsEphemeralAlone(t *testing.T) {
	cl := zktest.Standalone(t, zktest.WithSystemProperty("zookeeper.extendedTypesEnabled", "true"))
	for name, opt := range map[string]persistent.Option{
		"persistent": persistent.Persistent(),
		"ttl":        persistent.WithTTL(time.Minute),
	} {
		t.Run(name, func(t *testing.T) {
			path := "/pn/squat/" + name
			c := newClient(t, cl.Addrs())
			squatter := newClient(t, cl.Addrs())
			_, err := squatter.Create(ctxT(t, 10*time.Second), path, []byte("theirs"),
				framework.WithMode(framework.Ephemeral), framework.WithParents())
			require.NoError(t, err)
			_, before := onServer(t, c, path)

			n, err := persistent.New(c, path, []byte("mine"), opt)
			require.NoError(t, err)
			t.Cleanup(func() { _ = n.Close() })
			assert.ErrorIs(t, n.Start(ctxT(t, time.Second)), context.DeadlineExceeded, "took another session's ephemeral for its node")
			data, stat := onServer(t, c, path)
			require.NotNil(t, stat, "deleted another session's ephemeral")
			assert.Equal(t, "theirs", string(data), "wrote into another session's ephemeral")
			assert.Equal(t, before.Version, stat.Version)

			startErr := make(chan error, 1)
			go func() { startErr <- n.Start(ctxT(t, 60*time.Second)) }()
			waitNotInPlace(t, n, persistent.ErrOtherOwner)
			require.NoError(t, n.Close())
			<-startErr
			require.NoError(t, c.Drain(ctxT(t, 10*time.Second)))
			_, stat = onServer(t, c, path)
			require.NotNil(t, stat, "Close deleted another session's ephemeral")
			assert.Equal(t, squatter.Session().ID, stat.EphemeralOwner)
		})
	}
}
