package framework_test

import (
	"context"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A nil context is bad input: every call that takes one refuses it with
// ErrInvalidArgument, sends nothing (not even the namespace's create),
// and leaves the client usable.
func TestEveryCallRefusesANilContext(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := rawObserver(t, cl)
	req := testkit.NewRequests(t)
	c := newClient(t, cl.Addrs(), framework.WithNamespace("app"), req.Option())
	var nilCtx context.Context
	before := req.Count(t, "")
	testkit.RefusesNilContext(t, map[string]func() error{
		"Dial": func() error {
			_, err := framework.Dial(nilCtx, cl.Addrs())
			return err
		},
		"WaitConnected": func() error { _, err := c.WaitConnected(nilCtx); return err },
		"Drain":         func() error { return c.Drain(nilCtx) },
		"Get":           func() error { _, _, err := c.Get(nilCtx, "/a"); return err },
		"GetW":          func() error { _, _, _, err := c.GetW(nilCtx, "/a"); return err },
		"Set":           func() error { _, err := c.Set(nilCtx, "/a", nil, -1); return err },
		"Exists":        func() error { _, _, err := c.Exists(nilCtx, "/a"); return err },
		"ExistsW":       func() error { _, _, _, err := c.ExistsW(nilCtx, "/a"); return err },
		"Children":      func() error { _, _, err := c.Children(nilCtx, "/a"); return err },
		"ChildrenW":     func() error { _, _, _, err := c.ChildrenW(nilCtx, "/a"); return err },
		"Sync":          func() error { return c.Sync(nilCtx, "/a") },
		"Multi": func() error {
			_, err := c.Multi(nilCtx, &zk.CreateRequest{Path: "/a"})
			return err
		},
		"Delete":              func() error { return c.Delete(nilCtx, "/a", -1) },
		"Delete guaranteed":   func() error { return c.Delete(nilCtx, "/a", -1, framework.Guaranteed()) },
		"Delete InBackground": func() error { return c.Delete(nilCtx, "/a", -1, framework.InBackground()) },
		"Delete Deferred":     func() error { return c.Delete(nilCtx, "/a", -1, framework.Deferred()) },
		"Delete OwnedBy":      func() error { return c.Delete(nilCtx, "/a", -1, framework.OwnedBy(1), framework.InBackground()) },
		"Create":              func() error { _, err := c.Create(nilCtx, "/a", nil); return err },
		"Create protected ephemeral": func() error {
			_, err := c.Create(nilCtx, "/a/b", nil, framework.Protected(), framework.WithParents(),
				framework.WithMode(framework.EphemeralSequential))
			return err
		},
	})
	assert.Equal(t, before, req.Count(t, ""), "requests were sent")
	assert.Empty(t, c.PendingDeletes(), "a delete goes on in the background")
	assert.False(t, exists(t, obs, "/app"), "the namespace was made")

	// The client works as before.
	_, err := c.Create(testCtx(t), "/a", []byte("x"))
	require.NoError(t, err)
	data, _, err := c.Get(testCtx(t), "/a")
	require.NoError(t, err)
	assert.Equal(t, []byte("x"), data)
}
