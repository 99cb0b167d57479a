package lagread_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// lag is how far behind the leader the lagging follower applies writes:
// far longer than any read takes, and below its sync limit.
const lag = 2 * time.Second

// lagging bounds a call on the lagging follower's client: each of its
// round trips through the leader takes the lag, and a call may make
// several.
const lagging = 30 * time.Second

// laggingEnsemble is an ensemble with one follower that can be made to lag.
type laggingEnsemble struct {
	cl     *zktest.Cluster
	leader *zktest.Server
	f      *zktest.Server // the follower that lags
	// Leader is a client of the leader; Lagging one of f, through a proxy
	// that keeps it there.
	Leader, Lagging *framework.Client
	// Link is the lagging client's link to f: Cut it to make the client
	// reconnect (to f again).
	Link *zktest.SwitchProxy
}

func newLaggingEnsemble(t *testing.T) *laggingEnsemble {
	t.Helper()
	// 25 ticks of 200ms: the leader must not drop the follower for the lag.
	cl := zktest.Ensemble(t, 3, zktest.WithPeerProxies(), zktest.WithSyncLimit(25))
	e := &laggingEnsemble{cl: cl, leader: cl.Leader(30 * time.Second)}
	for _, s := range cl.Servers() {
		if s.ID != e.leader.ID {
			e.f = s
			break
		}
	}
	e.Link = cl.NewSwitchProxy(e.f.ID)
	e.Leader = dial(t, []string{e.leader.DirectAddr()})
	e.Lagging = dial(t, []string{e.Link.ConnectString()})
	return e
}

// Lag makes the follower apply the leader's writes lag late, until the test
// ends.
func (e *laggingEnsemble) Lag(t *testing.T) {
	t.Helper()
	p := e.cl.PeerProxy(e.f.ID, e.leader.ID)
	p.LagReplies(lag)
	t.Cleanup(p.Heal)
}

func dial(t *testing.T, addrs []string) *framework.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A session that outlasts the lag: a write of the lagging client is
	// answered only once its follower has applied it.
	c, err := framework.Dial(ctx, addrs, framework.WithSessionTimeout(10*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
