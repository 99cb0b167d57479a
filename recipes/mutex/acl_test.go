package mutex_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/curator"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// ZooKeeper checks DELETE (and CREATE) against the parent's ACL, so a lock
// node is only as safe as its directory: with CreatorACL, a client without
// the credential can neither delete a contender's node nor the lock
// directory, nor read a node, and cannot queue.
func TestCreatorACLProtectsLockNodesAndTheirDirectory(t *testing.T) {
	cl := zktest.Standalone(t)
	alice := newClient(t, cl.Addrs(),
		framework.WithDigestAuth("alice", "pw"),
		framework.WithACLProvider(framework.CreatorACL()))
	m := newMutex(t, alice, "/acl/app/lock")
	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	ctx := context.Background()
	for name, opts := range map[string][]framework.Option{
		"anonymous":      nil,
		"other identity": {framework.WithDigestAuth("mallory", "pw")},
		"wrong password": {framework.WithDigestAuth("alice", "nope")},
	} {
		t.Run(name, func(t *testing.T) {
			c := newClient(t, cl.Addrs(), opts...)
			assert.ErrorIs(t, c.Delete(ctx, h.Path(), -1), zk.ErrNoAuth, "deleted the holder's node")
			assert.ErrorIs(t, c.Delete(ctx, "/acl/app/lock", -1), zk.ErrNoAuth, "deleted the lock directory")
			assert.ErrorIs(t, c.Delete(ctx, "/acl/app", -1), zk.ErrNoAuth, "deleted a parent the recipe made")
			_, _, err := c.Get(ctx, h.Path())
			assert.ErrorIs(t, err, zk.ErrNoAuth, "read the holder's node")
			intruder := newMutex(t, c, "/acl/app/lock")
			_, err = intruder.TryAcquire(ctxT(t, 10*time.Second))
			assert.ErrorIs(t, err, zk.ErrNoAuth, "queued without the credential")
		})
	}
	assert.NoError(t, h.Err(), "the hold was disturbed")

	// Curator with the credential still shares the lock: it queues behind
	// the Go holder under the protected directory and gets the lock next.
	java := curator.Agent(t).StartWithDigest(t, cl.ConnectString(), agentSession, "alice:pw")
	java.Send("mutex-acquire j /acl/app/lock")
	waitNodes(t, alice, "/acl/app/lock", 2)
	java.ExpectNone(t, "acquired j", absenceWindow)
	require.NoError(t, h.Release())
	javaNode := strings.TrimPrefix(java.Expect(t, "acquired j ", 10*time.Second), "acquired j ")
	acl, _, err := alice.GetACL(t.Context(), javaNode)
	require.NoError(t, err)
	assert.Equal(t, zk.DigestACL(zk.PermAll, "alice", "pw"), acl, "Curator's node is alice's too")
	java.Call(t, "mutex-release j", "released j", 10*time.Second)
	waitNodes(t, alice, "/acl/app/lock", 0)
}
