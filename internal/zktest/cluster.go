package zktest

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/zkserver"
)

// Cluster is a standalone server (one member) or an ensemble started for one
// test, or an external server named by ZK_CONNECT.
type Cluster struct {
	t        testing.TB
	cfg      config
	backend  backend
	install  *zkserver.Install
	servers  []*Server
	external []string // ZK_CONNECT addresses
	proxy    *Proxy

	secureProxy *Proxy            // in front of the TLS ports; nil without WithTLS
	peerProxies map[[2]int]*Proxy // by (from, to) server ID; nil without WithPeerProxies
	elecProxies map[[2]int]*Proxy // the same for the election ports
	partition
}

type config struct {
	server       zkserver.Config
	startTimeout time.Duration
	tls          *tlsConfig // nil: no TLS port
	clientPort   int        // 0: a free port
	peerProxies  bool

	containers      Containers // nil: no container backend
	containersFirst bool       // containers even where a local install exists
}

func defaultConfig() config {
	return config{server: zkserver.DefaultConfig(), startTimeout: 60 * time.Second}
}

// Option changes how servers are configured.
type Option func(*config)

// WithTickTime sets the server tick (default 200ms). Session expiry is checked
// once per tick, so a short tick keeps expiry tests short.
func WithTickTime(d time.Duration) Option { return func(c *config) { c.server.TickTime = d } }

// WithSyncLimit sets how many ticks a follower may fall behind the leader
// (or the leader go unheard by it) before it is dropped from the quorum
// (default 5, a second at the default tick). A test that lags a follower on
// purpose must raise it above the lag.
func WithSyncLimit(ticks int) Option { return func(c *config) { c.server.SyncLimit = ticks } }

// WithSessionTimeouts sets the bounds the server negotiates session timeouts
// into (default 1s..60s).
func WithSessionTimeouts(min, max time.Duration) Option {
	return func(c *config) { c.server.MinSession, c.server.MaxSession = min, max }
}

// WithContainerCheck sets how often the server deletes empty container nodes
// (default 1s, the server's default is 60s).
func WithContainerCheck(d time.Duration) Option {
	return func(c *config) { c.server.ContainerCheck = d }
}

// WithDurable makes the server sync its log to disk on every write and use
// ZooKeeper's production tick (2s), for tests about restarts and durability
// rather than speed.
func WithDurable() Option {
	return func(c *config) {
		c.server.Durable, c.server.TickTime, c.server.MinSession = true, 2*time.Second, 4*time.Second
	}
}

// WithFullJIT runs the server JVMs with the full JIT and a larger heap, as in
// production, for benchmarks. By default they stop at the quick C1 compiler,
// which starts faster but runs the server slower.
func WithFullJIT() Option { return func(c *config) { c.server.FullJIT = true } }

// WithCPUs confines each server JVM to the CPUs of list, in taskset(1)'s
// syntax ("0", "0-1"): a benchmark pins the server to one core and its
// clients to another, so that the server alone is the limit. It needs a
// local install (containers are not confined).
func WithCPUs(list string) Option { return func(c *config) { c.server.CPUs = list } }

// WithClientPort makes a standalone server listen for clients on port
// instead of a free port. It needs a local install, and clients reach it at DirectAddrs; ensembles
// refuse it.
func WithClientPort(port int) Option { return func(c *config) { c.clientPort = port } }

// WithConfig appends raw lines to zoo.cfg (for example "secureClientPort=...").
func WithConfig(lines ...string) Option {
	return func(c *config) { c.server.Extra = append(c.server.Extra, lines...) }
}

// WithSystemProperty passes -Dkey=value to each server JVM.
func WithSystemProperty(key, value string) Option {
	return func(c *config) { c.server.SysProps[key] = value }
}

// Standalone starts one ZooKeeper server for t (or uses ZK_CONNECT) and stops
// it when t ends.
func Standalone(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	return newCluster(t, 1, opts)
}

// Ensemble starts an n-node ensemble (n odd, usually 3 or 5) and waits for a
// quorum. It needs a local install: it skips on ZK_CONNECT and on
// containers.
func Ensemble(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("zktest: Ensemble(%d): need at least one server", n)
	}
	return newCluster(t, n, opts)
}

func newCluster(t testing.TB, n int, opts []Option) *Cluster {
	t.Helper()
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	c := &Cluster{t: t, cfg: cfg}
	c.backend, c.install = locate(t, &cfg)
	if cfg.server.CPUs != "" && c.backend != backendLocal {
		t.Skipf("zktest: WithCPUs needs a server the harness starts from a local install: %s", InstallHint)
	}
	c.setupTLS()
	switch c.backend {
	case backendExternal:
		if n > 1 {
			t.Skipf("zktest: a %d-node ensemble needs servers the harness starts; ZK_CONNECT names an external server", n)
		}
		if cfg.clientPort != 0 {
			t.Skipf("zktest: WithClientPort needs a server the harness starts; ZK_CONNECT names an external server")
		}
		c.external = strings.Split(os.Getenv("ZK_CONNECT"), ",")
	case backendContainer:
		if cfg.clientPort != 0 {
			t.Fatalf("zktest: WithClientPort needs a local install; install one with: %s", InstallHint)
		}
		if n > 1 {
			t.Skipf("zktest: ensembles need a local install, not containers; install ZooKeeper locally: %s", InstallHint)
		}
		if cfg.peerProxies {
			t.Skipf("zktest: peer proxies need a local install, not containers; install ZooKeeper locally: %s", InstallHint)
		}
		s := &Server{ID: 1, cluster: c, container: cfg.containers.Start(t, cfg.containerConfig())}
		c.servers = []*Server{s}
		s.waitServing(cfg.startTimeout)
	case backendLocal:
		c.startLocal(n)
	}
	c.proxy = c.NewProxy()
	if cfg.tls != nil {
		c.secureProxy = c.NewSecureProxy()
	}
	return c
}

func (c *Cluster) startLocal(n int) {
	t := c.t
	t.Helper()
	procs := c.localServers(n)
	// Cleanups run last-in first-out: register the stop before anything that
	// may fail, so a failed start still takes every JVM down.
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range c.servers {
				t.Logf("zktest: server %d log tail:\n%s", s.ID, s.logTail(logLines()))
			}
		}
		for _, s := range c.servers {
			s.signal(syscall.SIGKILL, 10*time.Second)
		}
	})
	if c.cfg.peerProxies {
		c.startPeerProxies(procs)
	}
	for _, s := range c.servers {
		if err := s.proc.WriteConfig(procs, s.tlsConfigLines()); err != nil {
			t.Fatalf("zktest: config for server %d: %v", s.ID, err)
		}
		if err := s.proc.Start(); err != nil {
			t.Fatalf("zktest: start server %d: %v", s.ID, err)
		}
	}
	for _, s := range c.servers {
		s.waitServing(c.cfg.startTimeout)
	}
}

// localServers reserves the ports of n local servers (held until the test
// ends) and adds the servers to c, not started; it returns their
// processes.
func (c *Cluster) localServers(n int) []*zkserver.Server {
	t := c.t
	t.Helper()
	per := 3 // client, peer and election ports
	if c.cfg.tls != nil {
		per = 4 // and the TLS client port
	}
	ports, release, err := zkserver.FreePorts(per * n)
	if err != nil {
		t.Fatalf("zktest: free ports: %v", err)
	}
	// Registered before the servers' stop, so it runs after it: the ports
	// stay held while a server may restart on them.
	t.Cleanup(release)
	if c.cfg.clientPort != 0 {
		if n != 1 {
			t.Fatalf("zktest: WithClientPort is for a standalone server, not a %d-node ensemble", n)
		}
		ports[0] = c.cfg.clientPort
	}
	base := t.TempDir()
	procs := make([]*zkserver.Server, n)
	for i := 0; i < n; i++ {
		procs[i] = &zkserver.Server{
			ID:         i + 1,
			ClientPort: ports[per*i],
			PeerPort:   ports[per*i+1],
			ElecPort:   ports[per*i+2],
			Dir:        fmt.Sprintf("%s/server%d", base, i+1),
			Install:    c.install,
			Config:     &c.cfg.server,
		}
		s := &Server{ID: i + 1, cluster: c, proc: procs[i]}
		if c.cfg.tls != nil {
			s.securePort = ports[per*i+3]
		}
		c.servers = append(c.servers, s)
	}
	return procs
}

// TB is the test (or, for Main's cluster, the stand-in) the cluster
// belongs to, whose failure its methods report.
func (c *Cluster) TB() testing.TB { return c.t }

// Servers returns the cluster's servers (none for ZK_CONNECT).
func (c *Cluster) Servers() []*Server { return c.servers }

// Server returns the server with myid id.
func (c *Cluster) Server(id int) *Server {
	c.t.Helper()
	for _, s := range c.servers {
		if s.ID == id {
			return s
		}
	}
	c.t.Fatalf("zktest: no server %d", id)
	return nil
}

// Proxy is the cluster's shared proxy, the one Addrs and ConnectString use.
// Faults on it hit every client that connected through it.
func (c *Cluster) Proxy() *Proxy { return c.proxy }

// Addrs returns the client addresses of every server, through the shared
// proxy.
func (c *Cluster) Addrs() []string { return c.proxy.Addrs() }

// ConnectString is Addrs joined with commas, as ZooKeeper clients take it.
func (c *Cluster) ConnectString() string { return strings.Join(c.Addrs(), ",") }

// DirectAddrs returns the servers' own addresses, bypassing every proxy.
func (c *Cluster) DirectAddrs() []string {
	if c.backend == backendExternal {
		return append([]string(nil), c.external...)
	}
	out := make([]string, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.DirectAddr()
	}
	return out
}

// targets returns, per server, how to find its current address.
func (c *Cluster) targets() []func() string {
	if c.backend == backendExternal {
		out := make([]func() string, len(c.external))
		for i, a := range c.external {
			out[i] = func() string { return a }
		}
		return out
	}
	out := make([]func() string, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.DirectAddr
	}
	return out
}

// Controllable reports whether the harness can stop, kill and restart the
// servers and inspect their sessions (false for ZK_CONNECT).
func (c *Cluster) Controllable() bool { return c.backend != backendExternal }

// requireControl skips the test when the servers are external: a fault test
// that cannot inject its fault proves nothing, and saying so beats a pass.
func (c *Cluster) requireControl(what string) {
	c.t.Helper()
	if !c.Controllable() {
		c.t.Skipf("zktest: %s needs a server the harness controls; ZK_CONNECT names an external server", what)
	}
}

// Leader returns the ensemble's current leader (the only server of a
// standalone cluster), waiting up to timeout for one to be elected.
func (c *Cluster) Leader(timeout time.Duration) *Server {
	c.t.Helper()
	c.requireControl("Leader")
	deadline := time.Now().Add(timeout)
	for {
		for _, s := range c.servers {
			if m := s.Mode(); m == "leader" || m == "standalone" {
				return s
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("zktest: no leader after %v", timeout)
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}

// WaitServing waits until every running server serves requests (has a
// quorum), failing the test after timeout.
func (c *Cluster) WaitServing(timeout time.Duration) {
	c.t.Helper()
	for _, s := range c.servers {
		if s.container != nil || s.Running() {
			s.waitServing(timeout)
		}
	}
}
