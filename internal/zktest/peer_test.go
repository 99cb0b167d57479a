package zktest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// onServer reports whether session sid has a connection at addr.
func onServer(addr string, sid int64) bool {
	out, err := zktest.FourLetter(addr, "cons", 3*time.Second)
	return err == nil && strings.Contains(out, fmt.Sprintf("sid=0x%x,", sid))
}

// Quorum traffic goes through the peer proxies, and lagging what the leader
// sends a follower holds back that follower's answers from the leader (a
// sync) without dropping it from the quorum.
func TestPeerProxiesCarryTheQuorumAndLagAFollower(t *testing.T) {
	const lag = 500 * time.Millisecond
	cl := zktest.Ensemble(t, 3, zktest.WithPeerProxies(), zktest.WithSyncLimit(25))
	leader := cl.Leader(30 * time.Second)
	var f *zktest.Server
	for _, s := range cl.Servers() {
		if s.ID != leader.ID {
			f = s
			assert.Positive(t, cl.PeerProxy(s.ID, leader.ID).Links(), "server %d does not follow through its proxy", s.ID)
		}
	}
	c, _ := connect(t, []string{f.DirectAddr()}, 10*time.Second)

	cl.PeerProxy(f.ID, leader.ID).LagReplies(lag)
	start := time.Now()
	_, err := c.Sync("/")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), lag, "the leader's answer was not held")
	_, err = c.Create("/lagged", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	cl.PeerProxy(f.ID, leader.ID).Heal()
	assert.Equal(t, "follower", f.Mode(), "the lagging follower left the quorum")
}

// A switch proxy sends new links to the server it is switched to; a client
// it cut reconnects there with the same session.
func TestSwitchProxyMovesAClientToAnotherServer(t *testing.T) {
	cl := zktest.Ensemble(t, 3)
	sw := cl.NewSwitchProxy(1)
	c, r := connect(t, []string{sw.ConnectString()}, 10*time.Second)
	sid := c.SessionID()
	assert.True(t, onServer(cl.Server(1).DirectAddr(), sid), "the client is not on server 1")

	from := r.len()
	sw.SwitchTo(2)
	sw.Cut()
	r.waitSeq(t, from, 30*time.Second, zk.StateDisconnected, zk.StateHasSession)
	assert.Equal(t, sid, c.SessionID())
	assert.True(t, onServer(cl.Server(2).DirectAddr(), sid), "the client is not on server 2")
}

// A partition cuts the leader off from both followers on the quorum and
// the election ports: it stops serving, the followers elect one of
// themselves, and it cannot rejoin (its election links included, whoever
// dials whom) until the partition heals; then it follows the new leader.
func TestPartitionCutsTheLeaderOffUntilItHeals(t *testing.T) {
	cl := zktest.Ensemble(t, 3, zktest.WithPeerProxies(),
		zktest.WithSystemProperty("zookeeper.fastleader.maxNotificationInterval", "1000"))
	old := cl.Leader(30 * time.Second)
	for _, s := range cl.Servers() {
		for _, o := range cl.Servers() {
			if s.ID > o.ID {
				// The link kept is the one the higher ID dials, through its
				// proxy, even when the lower one dialled first.
				assert.Positive(t, cl.ElectionProxy(s.ID, o.ID).Links(), "election link %d->%d is not through its proxy", s.ID, o.ID)
			}
		}
	}

	cl.Partition(old.ID)
	var next *zktest.Server
	require.Eventually(t, func() bool {
		for _, s := range cl.Servers() {
			if s.ID != old.ID && s.Mode() == "leader" {
				next = s
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "the majority elected no leader")
	require.Eventually(t, func() bool { return old.Mode() == "" }, 10*time.Second, 50*time.Millisecond,
		"the cut-off leader still serves")
	// Several election rounds of the cut-off server, which would find the
	// others through any link that bypassed its proxy.
	assert.Never(t, func() bool { return old.Mode() != "" }, 4*time.Second, 100*time.Millisecond,
		"the cut-off server rejoined through the partition")

	cl.HealPartition()
	require.Eventually(t, func() bool { return old.Mode() == "follower" }, 30*time.Second, 50*time.Millisecond,
		"the old leader did not follow after the partition healed")
	assert.Equal(t, "leader", next.Mode())
}

// A proxy that refuses some servers keeps its client on the others, and
// says where the client is.
func TestProxyRefuseKeepsAClientOnTheOtherServers(t *testing.T) {
	cl := zktest.Ensemble(t, 3)
	p := cl.NewProxy()
	p.Refuse(1, 2)
	c, r := connect(t, p.Addrs(), 10*time.Second)
	assert.Equal(t, []int{3}, p.Servers())
	assert.True(t, onServer(cl.Server(3).DirectAddr(), c.SessionID()))

	p.Heal()
	from := r.len()
	p.Refuse(3)
	r.waitSeq(t, from, 30*time.Second, zk.StateDisconnected, zk.StateHasSession)
	require.Eventually(t, func() bool {
		s := p.Servers()
		return len(s) == 1 && s[0] != 3
	}, 10*time.Second, 20*time.Millisecond, "the client is on %v", p.Servers())
}
