package barrier_test

// One path, round after round (DESIGN rule 16): a batch job's phases meet
// on the same double barrier every night. Round k+1 must behave exactly as
// round 1, whoever arrives first and whoever is last out.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
)

// callDeadline bounds each Enter and Leave of the loops below. A round
// takes a few round trips; a call that needs this long is stuck.
const callDeadline = 10 * time.Second

// reuseRounds is how many rounds each loop runs: enough for every order
// of arrival and of names (a member's node has a new random name each
// round) to come up many times.
func reuseRounds() int {
	if testing.Short() {
		return 300
	}
	return 2000
}

// loopRounds makes n members loop Enter/Leave on path for rounds rounds,
// each call under callDeadline, and checks each round as the double
// barrier promises: no member's k-th Enter returns before every member
// has called its k-th Enter, and no k-th Leave returns before every member
// has called its k-th Leave. first, if not nil, picks the member that must
// arrive first in round k: the others call Enter only once its node is on
// the server.
func loopRounds(t *testing.T, cl *zktest.Cluster, path string, n, rounds int, first func(round int) int) {
	t.Helper()
	obs := newClient(t, cl.Addrs())
	ds := make([]*barrier.DoubleBarrier, n)
	for i := range ds {
		ds[i] = newDouble(t, newClient(t, cl.Addrs()), path, n)
	}
	entering := make([]atomic.Int64, n) // the round each member last called Enter for
	leaving := make([]atomic.Int64, n)
	var failed atomic.Bool
	var mu sync.Mutex
	var errs []string
	fail := func(format string, args ...any) {
		failed.Store(true)
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, fmt.Sprintf(format, args...))
	}
	behind := func(calls []atomic.Int64, round int64) []int {
		var out []int
		for j := range calls {
			if calls[j].Load() < round {
				out = append(out, j)
			}
		}
		return out
	}
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int64(1); k <= int64(rounds) && !failed.Load(); k++ {
				if first != nil && first(int(k)) != i {
					lead := ds[first(int(k))]
					if !waitFor(func() bool {
						name := lead.Node()
						kids, _, err := obs.Children(ctxT(t, callDeadline), path)
						return entering[first(int(k))].Load() == k && name != "" && err == nil && slices.Contains(kids, framework.Base(name))
					}, callDeadline, &failed) {
						fail("round %d: member %d never saw member %d arrive first", k, i, first(int(k)))
						return
					}
				}
				entering[i].Store(k)
				start := time.Now()
				if err := d.Enter(ctxT(t, callDeadline)); err != nil {
					fail("round %d: member %d: Enter after %v: %v", k, i, time.Since(start).Round(time.Millisecond), err)
					return
				}
				if b := behind(entering, k); len(b) > 0 {
					fail("round %d: member %d entered before members %v called Enter", k, i, b)
					return
				}
				leaving[i].Store(k)
				start = time.Now()
				if err := d.Leave(ctxT(t, callDeadline)); err != nil {
					fail("round %d: member %d: Leave after %v: %v", k, i, time.Since(start).Round(time.Millisecond), err)
					return
				}
				if b := behind(leaving, k); len(b) > 0 {
					fail("round %d: member %d left before members %v called Leave", k, i, b)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.Empty(t, errs)
	waitNodes(t, obs, path, 0) // no member, no ready node
}

// waitFor polls cond until it holds, within d, or stop is set.
func waitFor(cond func() bool, d time.Duration, stop *atomic.Bool) bool {
	end := time.Now().Add(d)
	for !stop.Load() && time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// Two members loop on one path with nothing else going on. Before the
// fix, a member whose node was gone waited until no member node was left,
// and found the other's node of the next round, whose owner waited in
// Enter for it: both stuck until their deadline.
func TestDoubleBarrierReusedPathRunsThousandsOfRounds(t *testing.T) {
	cl := zktest.Standalone(t)
	t.Run("two members, free running", func(t *testing.T) {
		loopRounds(t, cl, "/b/reuse/two", 2, reuseRounds(), nil)
	})
	t.Run("two members, each arrives first in turn", func(t *testing.T) {
		loopRounds(t, cl, "/b/reuse/two-ordered", 2, reuseRounds()/2, func(round int) int { return round % 2 })
	})
	t.Run("five members, free running", func(t *testing.T) {
		loopRounds(t, cl, "/b/reuse/five", 5, reuseRounds()/2, nil)
	})
	t.Run("five members, each arrives first in turn", func(t *testing.T) {
		loopRounds(t, cl, "/b/reuse/five-ordered", 5, reuseRounds()/4, func(round int) int { return round % 5 })
	})
}

// The writes a member's Leave may send.
var writeOps = []zktest.Op{zktest.OpCreate, zktest.OpDelete, zktest.OpSetData, zktest.OpMulti}

// The ways the last member's first write in Leave is lost: its request
// never arrives, or its reply never comes back.
var lostWrites = map[string]func(p *zktest.Proxy){
	"requests-dropped": func(p *zktest.Proxy) { p.DropRequestsFrom(writeOps...) },
	"replies-dropped":  func(p *zktest.Proxy) { p.DropRepliesFrom(writeOps...) },
}

// lastOfTwo enters a (on its own proxy) and b on path, then has b give up
// on leaving: b's node goes, and a is the round's last member.
func lastOfTwo(t *testing.T, cl *zktest.Cluster, path string) (a, b *barrier.DoubleBarrier, ac *framework.Client, p *zktest.Proxy) {
	t.Helper()
	obs := newClient(t, cl.Addrs())
	p = cl.NewProxy()
	// A session that outlives a lost write noticed, then healed: with
	// testkit's timeout the server could expire it before go-zookeeper,
	// which waits a second before it dials again, is back.
	ac = newClient(t, p.Addrs(), framework.WithSessionTimeout(testkit.CutSessionTimeout))
	a = newDouble(t, ac, path, 2)
	b = newDouble(t, newClient(t, cl.Addrs()), path, 2)
	ea := async(func() error { return a.Enter(ctxT(t, 30*time.Second)) })
	require.NoError(t, b.Enter(ctxT(t, 30*time.Second)))
	require.NoError(t, returned(t, ea, 30*time.Second, "Enter"))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, b.Leave(ctx), context.DeadlineExceeded)
	members(t, obs, path, 1)
	return a, b, ac, p
}

// enterAgainWaitsForTheOther checks that a, entering again, waits for b
// (the ready node of the round before must not let it in alone), and
// that both enter once b comes.
func enterAgainWaitsForTheOther(t *testing.T, obs *framework.Client, path string, a, b *barrier.DoubleBarrier) {
	t.Helper()
	again := async(func() error { return a.Enter(ctxT(t, 60*time.Second)) })
	members(t, obs, path, 1)
	blocked(t, again, "Enter again with no other member")
	require.NoError(t, b.Enter(ctxT(t, 30*time.Second)))
	require.NoError(t, returned(t, again, 30*time.Second, "Enter"))
}

// The last member out ends the round. When its first write in Leave is
// lost, Leave waits for the link to come back and finishes the round
// before it returns.
func TestLastLeaverWhoseWriteIsLostWaitsToEndTheRound(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	for name, lose := range lostWrites {
		t.Run(name, func(t *testing.T) {
			path := "/b/last-leaver/" + name
			a, b, ac, p := lastOfTwo(t, cl, path)
			lose(p)
			la := async(func() error { return a.Leave(ctxT(t, 60*time.Second)) })
			require.Eventually(t, func() bool { return !ac.State().IsConnected() }, 30*time.Second, 10*time.Millisecond,
				"the client did not notice its dead link")
			// Two thirds of a session timeout after the write: no longer,
			// or the session would expire before the link is back.
			select {
			case err := <-la:
				t.Fatalf("Leave returned (err=%v) with its last write unanswered", err)
			default:
			}
			p.Heal()
			require.NoError(t, returned(t, la, 30*time.Second, "Leave"))
			ok, _, err := obs.Exists(context.Background(), path+"/ready")
			require.NoError(t, err)
			require.False(t, ok, "Leave returned with the round's ready node still there")
			enterAgainWaitsForTheOther(t, obs, path, a, b)
		})
	}
}

// Leave must not report success until the server has ended the round
// (the ready node gone): a member told it had left, entering again at
// once, would find the old ready node and enter alone. Before the fix, a
// last member whose delete of the ready node could not finish by its
// deadline handed the delete to the background and returned nil. Here the
// deadline comes while the last member's writes are lost: Leave fails, or
// returns nil only with the ready node gone, and either way the member
// entering again waits for a second one.
func TestLastLeaverCutOffAtItsDeadlineLeavesNoReadyNodeToEnterAloneBy(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	for name, lose := range lostWrites {
		t.Run(name, func(t *testing.T) {
			path := "/b/last-leaver-deadline/" + name
			a, b, _, p := lastOfTwo(t, cl, path)
			lose(p)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := a.Leave(ctx)
			cancel()
			if err == nil {
				ok, _, err := obs.Exists(context.Background(), path+"/ready")
				require.NoError(t, err)
				assert.False(t, ok, "Leave returned nil with the round's ready node still there")
			} else {
				require.ErrorIs(t, err, context.DeadlineExceeded)
			}
			p.Heal()
			enterAgainWaitsForTheOther(t, obs, path, a, b)
		})
	}
}

// A round abandoned by every member (one gave up on leaving, the other
// closed) leaves its ready node behind. Curator's members, and ours before
// the fix, entered the next round on that path at once, alone. A member
// arriving after the ready node was made joins only while a member of its
// round is still in; here none is, so the old ready node is deleted and
// the next round waits for its members.
func TestAbandonedRoundsReadyNodeLetsNobodyIntoTheNextRoundAlone(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	const path = "/b/abandoned"
	ds := enterAll(t, cl, path, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	require.ErrorIs(t, ds[0].Leave(ctx), context.DeadlineExceeded)
	cancel()
	require.NoError(t, ds[1].Close())
	members(t, obs, path, 0)
	_, old, err := obs.Get(context.Background(), path+"/ready")
	require.NoError(t, err, "the abandoned round's ready node stays")

	again := async(func() error { return ds[0].Enter(ctxT(t, 60*time.Second)) })
	members(t, obs, path, 1)
	blocked(t, again, "Enter alone after an abandoned round")
	b := newDouble(t, newClient(t, cl.Addrs()), path, 2)
	require.NoError(t, b.Enter(ctxT(t, 30*time.Second)))
	require.NoError(t, returned(t, again, 30*time.Second, "Enter"))
	_, st, err := obs.Get(context.Background(), path+"/ready")
	require.NoError(t, err)
	require.NotEqual(t, old.Czxid, st.Czxid, "the round entered by the old ready node")
}

// A member arriving while a round is on (its ready node stands, a member
// of it is still in) joins it, as in Curator: memberQty is a threshold.
// The round then ends only once the late member has left too.
func TestLateMemberJoinsTheRoundUnderWayAndTheRoundWaitsForIt(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	const path = "/b/late"
	ds := enterAll(t, cl, path, 2)
	late := newDouble(t, newClient(t, cl.Addrs()), path, 2)
	require.NoError(t, late.Enter(ctxT(t, 30*time.Second)), "a late member enters at once")
	var leaves []<-chan error
	for _, d := range ds {
		leaves = append(leaves, async(func() error { return d.Leave(ctxT(t, 60*time.Second)) }))
	}
	for _, l := range leaves {
		blocked(t, l, "Leave with the late member still in")
	}
	require.NoError(t, late.Leave(ctxT(t, 30*time.Second)))
	for _, l := range leaves {
		require.NoError(t, returned(t, l, 30*time.Second, "Leave"))
	}
	waitNodes(t, obs, path, 0)
}

// Every ready node starts at version 0: a write conditional on its version
// alone cannot tell a ready node left behind from the next round's, made
// between the read and the write. Here x reads the ready node an abandoned
// round left, and its write (the delete of that node) is held on the way
// while y deletes it itself, counts x and y, and makes the next round's.
// x's delete, let go, must not take y's ready node: y would be in a round
// nobody else is in, and its Leave would not wait for x.
func TestAWriteOnALeftReadyNodeNeverHitsTheNextRoundsReadyNode(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	const path = "/b/incarnation"
	ds := enterAll(t, cl, path, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	require.ErrorIs(t, ds[0].Leave(ctx), context.DeadlineExceeded)
	cancel()
	require.NoError(t, ds[1].Close())
	members(t, obs, path, 0)
	_, left, err := obs.Get(context.Background(), path+"/ready")
	require.NoError(t, err, "the abandoned round's ready node stays")

	p := cl.NewProxy()
	x := newDouble(t, newClient(t, p.Addrs()), path, 2)
	p.StallRequestsFrom(zktest.OpDelete, zktest.OpSetData, zktest.OpMulti)
	ex := async(func() error { return x.Enter(ctxT(t, 60*time.Second)) })
	require.Eventually(t, p.Stalled, 30*time.Second, time.Millisecond, "x never wrote")
	y := newDouble(t, newClient(t, cl.Addrs()), path, 2)
	require.NoError(t, y.Enter(ctxT(t, 30*time.Second)))
	_, next, err := obs.Get(context.Background(), path+"/ready")
	require.NoError(t, err)
	require.NotEqual(t, left.Czxid, next.Czxid, "y entered by the left ready node")
	p.Release()
	require.NoError(t, returned(t, ex, 30*time.Second, "x's Enter"))
	_, now, err := obs.Get(context.Background(), path+"/ready")
	require.NoError(t, err, "y's ready node is gone")
	require.Equal(t, next.Czxid, now.Czxid, "y's ready node was replaced")

	ly := async(func() error { return y.Leave(ctxT(t, 60*time.Second)) })
	blocked(t, ly, "y's Leave with x still in")
	require.NoError(t, x.Leave(ctxT(t, 30*time.Second)))
	require.NoError(t, returned(t, ly, 30*time.Second, "y's Leave"))
	waitNodes(t, obs, path, 0)
}
