package zktest

import (
	"encoding/binary"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/zkrecipes/zkrecipes/zkserver"
)

// WithPeerProxies puts a Proxy on every server-to-server link of an
// ensemble: each server reaches every other member's quorum (peer) port
// through a proxy of its own for that member, PeerProxy(from, to), and its
// election port through another, ElectionProxy(from, to). Faults on the
// quorum proxies alone make a server lag or lose the leader without
// changing who is elected; Partition cuts both kinds, as a network
// partition does.
//
// A follower dials the leader, so on PeerProxy(follower, leader) the
// follower is the proxy's client: its replies are what the leader sends
// (proposals, commits, pings, the answers to session revalidations and
// syncs), its requests what the follower sends (acks, forwarded requests).
// LagReplies on it makes that follower apply commits late while it stays in
// the quorum and serves clients; raise WithSyncLimit above the lag.
func WithPeerProxies() Option { return func(c *config) { c.peerProxies = true } }

// startPeerProxies starts a quorum and an election proxy per ordered pair of
// servers and points each server's configuration at its own proxies.
func (c *Cluster) startPeerProxies(procs []*zkserver.Server) {
	c.t.Helper()
	c.peerProxies = map[[2]int]*Proxy{}
	c.elecProxies = map[[2]int]*Proxy{}
	port := func(p *Proxy) int { return p.fwds[0].ln.Addr().(*net.TCPAddr).Port }
	for _, from := range procs {
		from.PeerPorts = map[int]int{}
		from.ElecPorts = map[int]int{}
		for _, to := range procs {
			if to.ID == from.ID {
				continue
			}
			peer := "127.0.0.1:" + strconv.Itoa(to.PeerPort)
			p := c.newProxy([]func() string{func() string { return peer }})
			from.PeerPorts[to.ID] = port(p)
			c.peerProxies[[2]int{from.ID, to.ID}] = p
			elec := "127.0.0.1:" + strconv.Itoa(to.ElecPort)
			e := c.newProxy([]func() string{func() string { return elec }})
			from.ElecPorts[to.ID] = port(e)
			c.elecProxies[[2]int{from.ID, to.ID}] = e
		}
	}
	for k, e := range c.elecProxies {
		e.mu.Lock()
		e.greet = electionGreeting(port(c.elecProxies[[2]int{k[1], k[0]}]))
		e.mu.Unlock()
	}
}

// The greetings that open an election link (QuorumCnxManager's initial
// message) in the protocol versions that carry the dialling server's own
// election address.
const (
	electionProtocolV1 = -65535
	electionProtocolV2 = -65536
)

// electionGreeting rewrites the address in the greeting that opens an
// election link. A server dialled by one with a lower ID drops that link
// and dials back, at the address the greeting gives: the dialler's own
// election port, which would bypass the proxy the way back. back is the
// port of the proxy from the dialled server to the dialler, the proxy the
// dial back must take. Greetings it does not know pass unchanged.
func electionGreeting(back int) func([]byte) ([]byte, bool) {
	addr := []byte("127.0.0.1:" + strconv.Itoa(back))
	return func(b []byte) ([]byte, bool) {
		if len(b) < 8 {
			return nil, false
		}
		if v := int64(binary.BigEndian.Uint64(b)); v != electionProtocolV1 && v != electionProtocolV2 {
			return b, true // an older greeting: a server ID and nothing else
		}
		if len(b) < 20 {
			return nil, false
		}
		n := int(int32(binary.BigEndian.Uint32(b[16:20])))
		if n < 0 || n > 1<<16 {
			return b, true // not a greeting this knows
		}
		if len(b) < 20+n {
			return nil, false
		}
		out := make([]byte, 0, len(b)-n+len(addr))
		out = append(out, b[:16]...) // protocol version, server ID
		out = binary.BigEndian.AppendUint32(out, uint32(len(addr)))
		out = append(out, addr...)
		return append(out, b[20+n:]...), true
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

// ElectionProxy returns the proxy through which server from reaches server
// to's election port. It needs WithPeerProxies.
func (c *Cluster) ElectionProxy(from, to int) *Proxy {
	c.t.Helper()
	p, ok := c.elecProxies[[2]int{from, to}]
	if !ok {
		c.t.Fatalf("zktest: no election proxy from server %d to %d (WithPeerProxies, two distinct members)", from, to)
	}
	return p
}

// Partition cuts the servers ids off from the rest of the ensemble: every
// quorum and election link between them and the others drops every byte,
// both ways, new links included, as a network partition does (Blackhole).
// Neither side is told: each finds out by its own timeouts, a follower
// after syncLimit ticks without the leader, a leader after syncLimit ticks
// without a quorum of acks. Clients' links are not touched: give a client
// a proxy that Refuses the other side to keep it with its server.
// HealPartition ends it. It needs WithPeerProxies.
func (c *Cluster) Partition(ids ...int) {
	c.t.Helper()
	if c.peerProxies == nil {
		c.t.Fatalf("zktest: Partition needs WithPeerProxies")
	}
	c.partMu.Lock()
	defer c.partMu.Unlock()
	for _, a := range c.servers {
		for _, b := range c.servers {
			if a.ID == b.ID || slices.Contains(ids, a.ID) == slices.Contains(ids, b.ID) {
				continue
			}
			for _, p := range []*Proxy{c.peerProxies[[2]int{a.ID, b.ID}], c.elecProxies[[2]int{a.ID, b.ID}]} {
				p.Blackhole()
				c.cut = append(c.cut, p)
			}
		}
	}
}

// HealPartition ends every Partition: the links that dropped bytes are
// closed, and the servers dial each other again.
func (c *Cluster) HealPartition() {
	c.partMu.Lock()
	defer c.partMu.Unlock()
	for _, p := range c.cut {
		p.Heal()
	}
	c.cut = nil
}

// partition is the state of Partition.
type partition struct {
	partMu sync.Mutex
	cut    []*Proxy // the proxies Partition blackholed
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
