package framework_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A protected create whose reply is lost while its proposal still waits for
// a quorum, retried on a follower that lags the leader, finds its own node
// and makes no second one (issue 14 §6.1).
//
// The follower takes the session back only once the leader has answered its
// revalidation, and the leader's answers reach it in order after every
// commit sent before them: a node committed before the reconnect is always
// there. The lookup misses our node only when the create commits after the
// revalidation and the follower hears of the commit after it answers the
// list. So here both followers lag the leader by lag (their acks come late,
// so the create waits lag for its quorum), the client loses the create's
// reply at once and reconnects to one of them, G, within lag; G then serves
// the lookup before the commit reaches it, a further lag later. Without the
// Sync in findProtected the lookup lists /q without our node, the retry
// creates a second one, and the first stays behind it in the queue, an
// ephemeral of the live session. With it, G asks the leader, whose answer
// comes after the commit.
func TestProtectedCreateRetriedOnALaggingFollowerFindsItsNodeInFlight(t *testing.T) {
	const lag = 4 * time.Second
	// The followers hear from the leader lag late, so the leader must not
	// drop them for it: 100 ticks of 200ms.
	cl := zktest.Ensemble(t, 3, zktest.WithPeerProxies(), zktest.WithSyncLimit(100))
	leader := cl.Leader(waitFor)
	var followers []int
	for _, s := range cl.Servers() {
		if s.ID != leader.ID {
			followers = append(followers, s.ID)
		}
	}
	g := cl.Server(followers[0])

	sw := cl.NewSwitchProxy(leader.ID)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	// A session timeout well above the lag: a request on the lagging
	// follower waits for the leader up to twice the lag, and the client
	// gives up on a link silent for two thirds of the timeout.
	c, err := framework.Dial(ctx, []string{sw.ConnectString()},
		framework.WithSessionTimeout(30*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	obs, err := framework.Dial(ctx, []string{leader.DirectAddr()})
	require.NoError(t, err)
	t.Cleanup(func() { obs.Close() })
	_, err = obs.Create(ctx, "/q", nil)
	require.NoError(t, err)

	// G must have applied everything the client has seen, or it would
	// refuse the client's session; nothing is written from here to the
	// create.
	require.Eventually(t, func() bool {
		lz, gz := lastZxid(leader.DirectAddr()), lastZxid(g.DirectAddr())
		return lz > 0 && lz == gz
	}, waitFor, 10*time.Millisecond, "follower %d never caught up with the leader", g.ID)

	for _, f := range followers {
		cl.PeerProxy(f, leader.ID).LagReplies(lag)
	}
	healPeers := func() {
		for _, f := range followers {
			cl.PeerProxy(f, leader.ID).Heal()
		}
	}
	defer healPeers()

	sid := c.Session().ID
	sw.DropReplies()
	start := time.Now()
	res := createAsync(ctx, c, "/q/lock-", framework.WithMode(framework.EphemeralSequential), framework.Protected())
	// The leader holds the create, waiting for an ack: its reply is lost
	// whenever it comes.
	require.Eventually(t, func() bool { return queuedAt(leader.DirectAddr(), sid) > 0 },
		lag/2, 5*time.Millisecond, "the create never reached the leader")
	pending := time.Since(start)
	sw.SwitchTo(g.ID)
	sw.Heal() // the client's link lost a reply: closed, and it reconnects to G

	var r createResult
	select {
	case r = <-res:
	case <-time.After(60 * time.Second):
		t.Fatal("the create never returned")
	}
	took := time.Since(start)
	require.NoError(t, r.err)
	t.Logf("create pending on the leader after %v, returned %s after %v", pending, r.path, took)
	assert.True(t, queuedAt(g.DirectAddr(), sid) >= 0, "the client's session is not on follower %d", g.ID)
	healPeers()

	// The leader has applied everything the client was answered about.
	kids := children(t, obs, "/q")
	require.Len(t, kids, 1, "the retry on the lagging follower made a second node: the first is an orphan of the live session")
	assert.Equal(t, "/q/"+kids[0], r.path)
}

// lastZxid is the last zxid the server at addr has applied, 0 if it does not
// say.
func lastZxid(addr string) int64 {
	out, err := zktest.FourLetter(addr, "srvr", 3*time.Second)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Zxid: "); ok {
			z, err := strconv.ParseInt(strings.TrimSpace(v), 0, 64)
			if err == nil {
				return z
			}
		}
	}
	return 0
}

var consLine = regexp.MustCompile(`queued=(\d+),.*sid=(0x[0-9a-f]+)`)

// queuedAt is how many requests of session sid the server at addr holds
// unanswered, -1 if the session has no connection there.
func queuedAt(addr string, sid int64) int {
	out, err := zktest.FourLetter(addr, "cons", 3*time.Second)
	if err != nil {
		return -1
	}
	want := fmt.Sprintf("0x%x", sid)
	for _, line := range strings.Split(out, "\n") {
		m := consLine.FindStringSubmatch(line)
		if m != nil && m[2] == want {
			n, _ := strconv.Atoi(m[1])
			return n
		}
	}
	return -1
}
