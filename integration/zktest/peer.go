package zktest

import (
	"net"
	"strconv"
	"sync/atomic"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// WithPeerProxies puts a Proxy on every server-to-server quorum link of an
// ensemble: each server reaches every other member's quorum (peer) port
// through a proxy of its own for that member, PeerProxy(from, to). Leader
// election still goes direct, so faults on these proxies make a server lag
// or lose the leader without changing who is elected.
//
// A follower dials the leader, so on PeerProxy(follower, leader) the
// follower is the proxy's client: its replies are what the leader sends
// (proposals, commits, pings, the answers to session revalidations and
// syncs), its requests what the follower sends (acks, forwarded requests).
// LagReplies on it makes that follower apply commits late while it stays in
// the quorum and serves clients; raise WithSyncLimit above the lag.
func WithPeerProxies() Option { return func(c *config) { c.peerProxies = true } }

// startPeerProxies starts a proxy per ordered pair of servers and points each
// server's configuration at its own proxies.
func (c *Cluster) startPeerProxies(procs []*zkserver.Server) {
	c.t.Helper()
	c.peerProxies = map[[2]int]*Proxy{}
	for _, from := range procs {
		from.PeerPorts = map[int]int{}
		for _, to := range procs {
			if to.ID == from.ID {
				continue
			}
			addr := "127.0.0.1:" + strconv.Itoa(to.PeerPort)
			p := c.newProxy([]func() string{func() string { return addr }})
			from.PeerPorts[to.ID] = p.fwds[0].ln.Addr().(*net.TCPAddr).Port
			c.peerProxies[[2]int{from.ID, to.ID}] = p
		}
	}
}

// PeerProxy returns the proxy through which server from reaches server to's
// quorum port. It needs WithPeerProxies.
func (c *Cluster) PeerProxy(from, to int) *Proxy {
	c.t.Helper()
	p, ok := c.peerProxies[[2]int{from, to}]
	if !ok {
		c.t.Fatalf("zktest: no peer proxy from server %d to %d (WithPeerProxies, two distinct members)", from, to)
	}
	return p
}

// SwitchProxy is a Proxy with a single address whose server can be changed:
// a client that knows only that address can be moved from one server to
// another, to a lagging follower say, without a connect string that lets it
// choose.
type SwitchProxy struct {
	*Proxy
	to atomic.Pointer[Server]
}

// NewSwitchProxy starts a SwitchProxy whose links go to server id, closed
// when the test ends.
func (c *Cluster) NewSwitchProxy(id int) *SwitchProxy {
	c.t.Helper()
	sp := &SwitchProxy{}
	sp.to.Store(c.Server(id))
	sp.Proxy = c.newProxy([]func() string{func() string { return sp.to.Load().DirectAddr() }})
	return sp
}

// SwitchTo sends the links accepted from now on to server id. Open links stay
// where they are: Cut them, or Heal links a fault has tainted, to make the
// client reconnect.
func (sp *SwitchProxy) SwitchTo(id int) {
	sp.cluster.t.Helper()
	sp.to.Store(sp.cluster.Server(id))
}
