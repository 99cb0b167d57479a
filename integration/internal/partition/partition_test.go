package partition_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sessionTimeout is both clients' session timeout.
const sessionTimeout = 4 * time.Second

// A holder on a follower that a partition cuts off learns it has lost its
// hold before a waiter on the majority is granted it, when the follower
// notices the cut (5 ticks of 200ms: a second) well within two thirds of
// the session timeout: the follower drops its clients then, and the
// majority can expire the holder's session no sooner than two thirds of a
// timeout after the cut (it last heard of it from the follower, which the
// client pings every third of a timeout).
func TestHolderOnAFollowerCutOffFromTheQuorumLearnsBeforeTheMajorityGrants(t *testing.T) {
	lossBeforeGrant(t, 5)
}

// The same with a follower that notices the cut later than two thirds of
// the session timeout (25 ticks of 200ms, 5s, against 4s): until then it
// answers the holder's pings and reads. The holder must not take those for
// proof of life (before, it trusted its hold while the majority expired
// its session and granted the lock: loss 4.99s after the cut, grant
// 4.12s): only a reply the leader gives proves the session, and the
// client syncs for one when idle. ZooKeeper's sample
// configuration (tickTime 2000, syncLimit 5: 10s) against the library's
// default session timeout (10s) is this case.
func TestHolderOnAFollowerThatNoticesTheCutLateLearnsBeforeTheMajorityGrants(t *testing.T) {
	lossBeforeGrant(t, 25)
}

// lossBeforeGrant holds a mutex through a follower, waits for it on the
// leader, cuts the follower off with a partition, and checks that the
// holder's loss signal comes before the waiter's grant.
func lossBeforeGrant(t *testing.T, syncLimit int) {
	cl := zktest.Ensemble(t, 3, zktest.WithPeerProxies(), zktest.WithSyncLimit(syncLimit))
	leader := cl.Leader(30 * time.Second)
	var f *zktest.Server
	for _, s := range cl.Servers() {
		if s.ID != leader.ID {
			f = s
			break
		}
	}
	// The holder can reach its follower only: it stays on the minority side.
	onF := dial(t, []string{cl.NewSwitchProxy(f.ID).ConnectString()})
	onLeader := dial(t, []string{leader.DirectAddr()})
	held, err := mutex.New(onF, "/partition/lock")
	require.NoError(t, err)
	t.Cleanup(func() { _ = held.Close() })
	waiting, err := mutex.New(onLeader, "/partition/lock")
	require.NoError(t, err)
	t.Cleanup(func() { _ = waiting.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := held.Acquire(ctx)
	require.NoError(t, err)
	granted := make(chan time.Time, 1)
	go func() {
		if _, err := waiting.Acquire(ctx); err == nil {
			granted <- time.Now()
		}
		close(granted)
	}()
	require.Eventually(t, func() bool {
		ps, err := held.ParticipantNodes(ctx)
		return err == nil && len(ps) == 2
	}, 10*time.Second, 10*time.Millisecond, "the waiter never queued")

	cl.Partition(f.ID)
	t.Cleanup(cl.HealPartition)
	cut := time.Now()
	var lost, grant time.Time
	select {
	case <-h.Done():
		lost = time.Now()
	case <-time.After(30 * time.Second):
		t.Fatal("the holder never learnt")
	}
	grant, ok := <-granted
	require.True(t, ok, "the waiter was never granted")
	t.Logf("loss signal %v after the cut, grant on the majority %v after", lost.Sub(cut).Round(time.Millisecond), grant.Sub(cut).Round(time.Millisecond))
	assert.True(t, lost.Before(grant), "the majority granted the lock %v before the holder on the cut-off follower learnt it had lost it",
		lost.Sub(grant).Round(time.Millisecond))
}

func dial(t *testing.T, addrs []string) *framework.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Dial(ctx, addrs, framework.WithSessionTimeout(sessionTimeout))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
