package zktest

import (
	"testing"
	"time"

	harness "github.com/zkrecipes/zkrecipes/internal/zktest"
)

// InstallHint is the command that installs ZooKeeper (and a JDK) on Debian,
// which is what a failed start prints.
const InstallHint = harness.InstallHint

// Option configures the servers a test starts. The defaults are tuned for
// tests: a 200ms tick, session timeouts negotiated into 1s..60s, empty
// container nodes deleted every second.
type Option func(*settings)

type settings struct {
	harness []harness.Option
	docker  bool
	image   string
}

// WithDocker runs the server in Docker even where ZooKeeper is installed
// locally; the test fails when no Docker daemon answers (see
// DockerAvailable to skip instead). Docker runs standalone servers only.
func WithDocker() Option { return func(s *settings) { s.docker = true } }

// WithImage names the image a server in Docker runs (default
// "zookeeper:3.8", the official image): the ZooKeeper version your
// production runs.
func WithImage(ref string) Option { return func(s *settings) { s.image = ref } }

// WithTickTime sets the server's tick (default 200ms). The server checks
// for expired sessions once a tick, so a short tick keeps expiry tests
// short.
func WithTickTime(d time.Duration) Option {
	return func(s *settings) { s.harness = append(s.harness, harness.WithTickTime(d)) }
}

// WithSessionTimeouts sets the bounds the server negotiates a client's
// session timeout into (default 1s..60s), as minSessionTimeout and
// maxSessionTimeout do in zoo.cfg.
func WithSessionTimeouts(min, max time.Duration) Option {
	return func(s *settings) { s.harness = append(s.harness, harness.WithSessionTimeouts(min, max)) }
}

// WithConfig appends raw lines to zoo.cfg, for a setting the kit has no
// option for. In Docker, a line may not contain spaces.
func WithConfig(lines ...string) Option {
	return func(s *settings) { s.harness = append(s.harness, harness.WithConfig(lines...)) }
}

// WithSystemProperty passes -Dkey=value to every server's JVM.
func WithSystemProperty(key, value string) Option {
	return func(s *settings) { s.harness = append(s.harness, harness.WithSystemProperty(key, value)) }
}

// harnessOptions turns opts into the harness's, with Docker as the way to
// run a server when no local install exists.
func harnessOptions(opts []Option) []harness.Option {
	s := settings{image: DefaultImage}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	out := append([]harness.Option{harness.WithContainers(docker{image: s.image})}, s.harness...)
	if s.docker {
		out = append(out, harness.WithContainersFirst())
	}
	return out
}

// Cluster is the servers one test started: a standalone server, an
// ensemble, or the external server ZK_CONNECT names.
type Cluster struct {
	c *harness.Cluster
	t testing.TB
}

// Standalone starts one ZooKeeper server for t and stops it when t ends.
func Standalone(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	return &Cluster{c: harness.Standalone(t, harnessOptions(opts)...), t: t}
}

// Ensemble starts an n-node ensemble (n odd: 3 or 5) for t, waits for a
// quorum, and stops it when t ends. It needs a local install of ZooKeeper:
// it skips, saying why, on ZK_CONNECT and where only Docker is available.
func Ensemble(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	return &Cluster{c: harness.Ensemble(t, n, harnessOptions(opts)...), t: t}
}

// ConnectString is the servers' addresses, comma-separated, through the
// cluster's shared proxy: what to give the code under test when it needs
// no fault of its own.
func (c *Cluster) ConnectString() string { return c.c.ConnectString() }

// Addrs is ConnectString as a list, the form framework.Dial takes.
func (c *Cluster) Addrs() []string { return c.c.Addrs() }

// DirectAddrs is the servers' own addresses, past every proxy: for a
// client that must stay connected whatever fault the test injects.
func (c *Cluster) DirectAddrs() []string { return c.c.DirectAddrs() }

// Proxy is the cluster's shared proxy, the one ConnectString goes
// through: a fault on it hits every client connected that way.
func (c *Cluster) Proxy() *Proxy { return &Proxy{p: c.c.Proxy(), t: c.t} }

// NewProxy gives one client links of its own to every server, so that a
// fault (or a session expiry) hits that client alone. It closes when the
// test ends.
func (c *Cluster) NewProxy() *Proxy { return &Proxy{p: c.c.NewProxy(), t: c.t} }

// Servers returns the cluster's servers, none for ZK_CONNECT.
func (c *Cluster) Servers() []*Server {
	var out []*Server
	for _, s := range c.c.Servers() {
		out = append(out, &Server{s: s, t: c.t})
	}
	return out
}

// Server returns the server whose myid is id (1-based), failing the test
// when there is none.
func (c *Cluster) Server(id int) *Server {
	c.t.Helper()
	return &Server{s: c.c.Server(id), t: c.t}
}

// Leader returns the ensemble's leader (a standalone cluster's only
// server), waiting up to timeout for an election.
func (c *Cluster) Leader(timeout time.Duration) *Server {
	c.t.Helper()
	return &Server{s: c.c.Leader(timeout), t: c.t}
}

// WaitServing waits until every running server serves requests (has a
// quorum), failing the test after timeout: after a Kill and Start, say.
func (c *Cluster) WaitServing(timeout time.Duration) {
	c.t.Helper()
	c.c.WaitServing(timeout)
}

// SessionAlive reports whether a running server still tracks the session
// (framework.Client's Session().ID): after ExpireSession, it does not.
func (c *Cluster) SessionAlive(sessionID int64) bool {
	c.t.Helper()
	return c.c.SessionAlive(sessionID)
}
