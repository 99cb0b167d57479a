package zktest_test

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/zkserver"
)

// jvmContainers is a container backend whose "containers" are local JVMs
// that, like Docker's, listen on a new port at every start: it runs the
// harness's container path against a real server on machines without
// Docker. The test kit's Docker backend is tested in its own module,
// where a daemon answers.
type jvmContainers struct{}

func (jvmContainers) Available(context.Context) error {
	_, err := zkserver.Locate()
	return err
}

func (jvmContainers) Start(t testing.TB, cfg zktest.ContainerConfig) zktest.Container {
	t.Helper()
	in, err := zkserver.Locate()
	require.NoError(t, err)
	conf := zkserver.DefaultConfig()
	conf.TickTime = cfg.TickTime
	c := &jvmContainer{install: in, conf: &conf, dir: t.TempDir()}
	t.Cleanup(func() { c.Stop(t, true) })
	c.Start(t)
	return c
}

type jvmContainer struct {
	install *zkserver.Install
	conf    *zkserver.Config
	dir     string

	mu  sync.Mutex
	srv *zkserver.Server
}

func (c *jvmContainer) Addr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.srv.DirectAddr()
}

func (c *jvmContainer) Stop(t testing.TB, kill bool) {
	c.mu.Lock()
	srv := c.srv
	c.mu.Unlock()
	if kill {
		srv.Signal(syscall.SIGKILL, 10*time.Second)
	} else {
		srv.Signal(syscall.SIGTERM, 15*time.Second)
	}
}

// Start starts the server on the same data and new ports.
func (c *jvmContainer) Start(t testing.TB) {
	t.Helper()
	ports, release, err := zkserver.FreePorts(3)
	require.NoError(t, err)
	t.Cleanup(release)
	srv := &zkserver.Server{ID: 1, ClientPort: ports[0], PeerPort: ports[1], ElecPort: ports[2],
		Dir: c.dir, Install: c.install, Config: c.conf}
	require.NoError(t, srv.WriteConfig([]*zkserver.Server{srv}, nil))
	require.NoError(t, srv.Start())
	c.mu.Lock()
	c.srv = srv
	c.mu.Unlock()
}

// The container path: the server is started through the backend, the
// proxy follows it to its new address after a restart, its data stays,
// and ExpireSession works on it.
func TestContainerBackendServesFollowsARestartAndExpires(t *testing.T) {
	cl := zktest.Standalone(t, zktest.WithContainers(jvmContainers{}), zktest.WithContainersFirst())
	s := cl.Server(1)
	require.True(t, s.Running())
	assert.Equal(t, "standalone", s.Mode())
	assert.Empty(t, s.LogPath(), "a container's log is not the harness's")

	p := cl.NewProxy()
	c, r := connect(t, p.Addrs(), 2*time.Second)
	_, err := c.Create("/kept", []byte("v"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	before := s.DirectAddr()
	s.Stop()
	assert.False(t, s.Running())
	s.Start()
	require.True(t, s.Running())
	assert.NotEqual(t, before, s.DirectAddr(), "the restarted container listens on a new port")
	writeEventually(t, c, "/after-restart", 30*time.Second)
	data, _, err := c.Get("/kept")
	require.NoError(t, err)
	assert.Equal(t, "v", string(data))

	sid := c.SessionID()
	from := r.len()
	zktest.ExpireSession(t, p, sid)
	assert.False(t, cl.SessionAlive(sid))
	r.waitSeq(t, from, 20*time.Second, zk.StateExpired, zk.StateHasSession)
}

// Ensembles and peer proxies need servers the harness starts itself: on
// containers the test skips and says why (here, in a subtest that must
// skip).
func TestContainerBackendSkipsAnEnsemble(t *testing.T) {
	skipped := false
	t.Run("ensemble", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		zktest.Ensemble(t, 3, zktest.WithContainers(jvmContainers{}), zktest.WithContainersFirst())
	})
	assert.True(t, skipped)
}
