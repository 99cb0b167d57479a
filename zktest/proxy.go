package zktest

import (
	"testing"
	"time"

	harness "github.com/zkrecipes/zkrecipes/internal/zktest"
)

// Proxy is a TCP proxy in front of every server of a Cluster: the code
// under test connects through it, and the test injects faults into its
// links. Faults last until Heal.
type Proxy struct {
	p *harness.Proxy
	t testing.TB
}

// ConnectString is the proxy's addresses, comma-separated, one per server.
func (p *Proxy) ConnectString() string { return p.p.ConnectString() }

// Addrs is ConnectString as a list, the form framework.Dial takes.
func (p *Proxy) Addrs() []string { return p.p.Addrs() }

// Cut closes every link and refuses new ones: the client sees its
// connection fail at once, and reconnects when the proxy heals.
func (p *Proxy) Cut() { p.p.Cut() }

// Blackhole keeps the links open but delivers nothing either way, as a
// network partition does: the client hears nothing until its own timeouts
// fire.
func (p *Proxy) Blackhole() { p.p.Blackhole() }

// Delay holds every chunk of data for d in each direction, as a slow
// network would.
func (p *Proxy) Delay(d time.Duration) { p.p.Delay(d) }

// DropReplies delivers requests but drops the server's replies: the server
// applies a write the client never hears about.
func (p *Proxy) DropReplies() { p.p.DropReplies() }

// DropRequests drops the client's requests before they reach the server.
func (p *Proxy) DropRequests() { p.p.DropRequests() }

// Heal ends every fault: links carry data again, and new ones are
// accepted.
func (p *Proxy) Heal() { p.p.Heal() }

// ExpireSession makes the servers really expire sessionID, the session of
// a client connected through p (framework.Client's Session().ID): it
// blackholes p until no server tracks the session any more, then heals p.
// The client learns of the expiry the way it would in production, when it
// reconnects. Every client connected through p loses its session, so give
// the client under test a proxy of its own (Cluster.NewProxy). It takes
// about the session timeout, and skips the test on ZK_CONNECT.
func (p *Proxy) ExpireSession(sessionID int64) {
	p.t.Helper()
	harness.ExpireSession(p.t, p.p, sessionID)
}
