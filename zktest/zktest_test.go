package zktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

func dial(t *testing.T, addrs []string) *framework.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Dial(ctx, addrs, framework.WithSessionTimeout(2*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// What a user's first test does: a server, a client through the proxy, a
// node written and read back, the server restarted on its data.
func TestStandaloneServesAndKeepsItsDataAcrossARestart(t *testing.T) {
	cl := zktest.Standalone(t)
	require.Len(t, cl.Servers(), 1)
	assert.Equal(t, "standalone", cl.Server(1).Mode())
	c := dial(t, cl.Addrs())
	_, err := c.Create(ctxT(t, 10*time.Second), "/kit", []byte("data"))
	require.NoError(t, err)

	cl.Server(1).Restart()
	data, _, err := c.Get(ctxT(t, 30*time.Second), "/kit")
	require.NoError(t, err)
	assert.Equal(t, "data", string(data))
}

// A proxy's fault hits its own clients only; Heal ends it.
func TestAProxyFaultHitsItsOwnClientsOnly(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	victim := dial(t, p.Addrs())
	bystander := dial(t, cl.Addrs())

	p.Cut()
	_, _, err := victim.Get(ctxT(t, 500*time.Millisecond), "/")
	assert.Error(t, err, "a read through a cut proxy")
	_, _, err = bystander.Get(ctxT(t, 10*time.Second), "/")
	assert.NoError(t, err, "a read through the shared proxy")

	p.Heal()
	_, _, err = victim.Get(ctxT(t, 30*time.Second), "/")
	assert.NoError(t, err, "a read after Heal")
}

// ExpireSession is a real expiry: the server forgets the session, and a
// hold under it ends.
func TestExpireSessionEndsTheHoldAndTheSession(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := dial(t, p.Addrs())
	m, err := mutex.New(c, "/locks/kit")
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	id := c.Session().ID
	require.True(t, cl.SessionAlive(id))

	p.ExpireSession(id)
	assert.False(t, cl.SessionAlive(id))
	select {
	case <-h.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the hold did not end after its session expired")
	}
	err = h.Err()
	assert.True(t, errors.Is(err, zkrecipes.ErrSuspended) || errors.Is(err, zkrecipes.ErrSessionLost), "%v", err)
	_ = h.Release()
}

// An ensemble keeps serving when its leader is killed, and takes it back.
func TestEnsembleSurvivesItsLeadersDeath(t *testing.T) {
	cl := zktest.Ensemble(t, 3)
	c := dial(t, cl.Addrs())
	leader := cl.Leader(30 * time.Second)
	leader.Kill()
	assert.False(t, leader.Running())
	_, err := c.Create(ctxT(t, 60*time.Second), "/after-kill", nil)
	require.NoError(t, err)
	leader.Start()
	cl.WaitServing(60 * time.Second)
	assert.NotEmpty(t, leader.Mode())
}

// The Docker path, where a daemon answers; elsewhere the test says it did
// not run.
func TestDockerStandaloneServesStopsAndExpires(t *testing.T) {
	if err := zktest.DockerAvailable(ctxT(t, 5*time.Second)); err != nil {
		t.Skipf("the Docker path is not tested on this machine: %v", err)
	}
	cl := zktest.Standalone(t, zktest.WithDocker())
	p := cl.NewProxy()
	c := dial(t, p.Addrs())
	_, err := c.Create(ctxT(t, 10*time.Second), "/docker", []byte("data"))
	require.NoError(t, err)

	cl.Server(1).Restart()
	data, _, err := c.Get(ctxT(t, 60*time.Second), "/docker")
	require.NoError(t, err)
	assert.Equal(t, "data", string(data))

	id := c.Session().ID
	p.ExpireSession(id)
	assert.False(t, cl.SessionAlive(id))
}
