package mutex_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// noReadUnder gives nodes under prefix every permission but READ.
type noReadUnder string

func (p noReadUnder) ACLForPath(path string) []zk.ACL {
	if strings.HasPrefix(path, string(p)) {
		return zk.WorldACL(zk.PermAll &^ zk.PermRead)
	}
	return nil
}
func (noReadUnder) DefaultACL() []zk.ACL { return zk.WorldACL(zk.PermAll) }

// When the hold's own check (op 0 of the multi) fails with anything but
// NoNode, Fenced must not hand back a *MultiOpError whose Index is 0: the
// documented meaning of that is "your op 0 failed". Here the check fails
// with NoAuth (ZooKeeper checks READ for a check op) and the caller's op 0
// is innocent.
func TestFencedCheckFailureIsNotBlamedOnCallersFirstOp(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs(), framework.WithACLProvider(noReadUnder("/locks/acl/")))
	h, err := newMutex(t, c, "/locks/acl").Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Skipf("acquire without READ on the own node: %v", err)
	}
	_, err = h.Fenced(ctxT(t, 10*time.Second), &zk.CreateRequest{Path: "/innocent"})
	t.Logf("fenced: %v", err)
	require.Error(t, err)
	assert.ErrorIs(t, err, zkrecipes.ErrFenceCheckFailed)
	assert.NotErrorIs(t, err, zkrecipes.ErrHoldLost, "the hold stands")
	var me *framework.MultiOpError
	if errors.As(err, &me) {
		assert.NotEqual(t, 0, me.Index, "the hold's check failed (%v on %s), yet the error names the caller's op 0", me.Err, me.Path)
		assert.Equal(t, "/innocent", me.Path, "a MultiOpError must name one of the caller's ops")
	}
}

// the check path goes through the
// namespace exactly once.
func TestFencedUnderANamespace(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs(), framework.WithNamespace("app"))
	raw := newClient(t, cl.Addrs())
	h, err := newMutex(t, c, "/locks/ns").Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	_, err = h.Fenced(ctxT(t, 10*time.Second), &zk.CreateRequest{Path: "/a"})
	require.NoError(t, err)
	ok, _, err := raw.Exists(ctxT(t, 10*time.Second), "/app/a")
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, raw.Delete(ctxT(t, 10*time.Second), "/app"+h.Path(), -1))
	_, err = h.Fenced(ctxT(t, 10*time.Second), &zk.CreateRequest{Path: "/b"})
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	ok, _, err = raw.Exists(ctxT(t, 10*time.Second), "/app/b")
	require.NoError(t, err)
	assert.False(t, ok)
}
