package leader_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
)

const helperEnv = "ZKRECIPES_LEADER_HELPER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		runHelper(spec)
		return
	}
	os.Exit(zktest.Main(m))
}

// runHelper is a latch participant in a child process, so kill -9 is real.
func runHelper(spec string) {
	parts := strings.Split(spec, "|") // addrs|path|id|sessionTimeout[|thaw]
	timeout, _ := time.ParseDuration(parts[3])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Dial(ctx, strings.Split(parts[0], ","), framework.WithSessionTimeout(timeout))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	l, err := leader.NewLatch(c, parts[1], leader.WithParticipantID(parts[2]))
	if err == nil {
		err = l.Start(context.Background())
	}
	if err == nil {
		_, err = l.Await(ctx)
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("leading")
	if len(parts) > 4 && parts[4] == "thaw" {
		awaitOnThaw(l)
	}
	select {}
}

var (
	newClient = testkit.Client
	ctxT      = testkit.Ctx
)

func newLatch(t testing.TB, c *framework.Client, path, id string) *leader.Latch {
	t.Helper()
	l, err := leader.NewLatch(c, path, leader.WithParticipantID(id))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

// leading reports whether the latch or selector leads now.
func leading(l interface{ Held() (*hold.Hold, bool) }) bool { _, ok := l.Held(); return ok }

// term is the latch's current term, or nil.
func term(l *leader.Latch) *hold.Hold { h, _ := l.Held(); return h }

func waitParticipants(t testing.TB, c *framework.Client, path string, n int) []string {
	t.Helper()
	var ids []string
	require.Eventually(t, func() bool {
		var err error
		ids, err = leader.Participants(context.Background(), c, path)
		return err == nil && len(ids) == n
	}, 30*time.Second, 10*time.Millisecond, "want %d participants", n)
	return ids
}

var latchNode = regexp.MustCompile(`^_c_[0-9a-f-]{36}-latch-\d{10}$`)

func TestFirstLatchLeadsAndTheNextLeadsAfterItCloses(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	a := newLatch(t, newClient(t, cl.Addrs()), "/elect/a", "a")
	b := newLatch(t, newClient(t, cl.Addrs()), "/elect/a", "b")
	subA, subB := a.Subscribe(), b.Subscribe()
	defer subB.Close()
	notLeading := leader.Change{}
	assert.Equal(t, notLeading, stripTime(<-subA.Changes()), "first, where it stands")
	assert.Equal(t, notLeading, stripTime(<-subB.Changes()))

	require.NoError(t, a.Start(context.Background()))
	ta, err := a.Await(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, b.Start(context.Background()))
	assert.Equal(t, []string{"a", "b"}, waitParticipants(t, obs, "/elect/a", 2))
	id, err := leader.Leader(ctxT(t, 10*time.Second), obs, "/elect/a")
	require.NoError(t, err)
	assert.Equal(t, "a", id)
	kids, _, err := obs.Children(ctxT(t, 10*time.Second), "/elect/a")
	require.NoError(t, err)
	for _, k := range kids {
		assert.Regexp(t, latchNode, k)
	}
	assert.True(t, leading(a))
	assert.False(t, leading(b))
	assert.Equal(t, leader.Change{Leader: true, Token: ta.Token()}, stripTime(<-subA.Changes()))

	require.NoError(t, a.Close())
	tb, err := b.Await(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Greater(t, tb.Token(), ta.Token())
	assert.ErrorIs(t, ta.Err(), zkrecipes.ErrClosed)
	end := <-subA.Changes()
	assert.False(t, end.Leader)
	assert.ErrorIs(t, end.Reason, zkrecipes.ErrClosed)
	_, open := <-subA.Changes()
	assert.False(t, open, "the subscription ends with the latch")
	assert.True(t, (<-subB.Changes()).Leader)
}

func stripTime(c leader.Change) leader.Change { c.Time = time.Time{}; return c }

// A subscriber that comes after the latch leads is told it leads, then the
// end of the term: a Curator user's addListener after start() misses
// nothing.
func TestLateSubscriberIsToldWhereTheLatchStandsThenEachChange(t *testing.T) {
	cl := zktest.Standalone(t)
	a := newLatch(t, newClient(t, cl.Addrs()), "/elect/late", "a")
	require.NoError(t, a.Start(context.Background()))
	ta, err := a.Await(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	sub := a.Subscribe()
	defer sub.Close()
	assert.Equal(t, leader.Change{Leader: true, Token: ta.Token()}, stripTime(<-sub.Changes()))
	require.NoError(t, ta.Release()) // steps down, and queues again at the back
	end := <-sub.Changes()
	assert.False(t, end.Leader)
	assert.ErrorIs(t, end.Reason, zkrecipes.ErrReleased)
}

// Await on a latch that was never started fails at once, saying so,
// instead of waiting for a term that cannot come.
func TestAwaitBeforeStartFailsAtOnce(t *testing.T) {
	cl := zktest.Standalone(t)
	a := newLatch(t, newClient(t, cl.Addrs()), "/elect/unstarted", "a")
	start := time.Now()
	_, err := a.Await(context.Background()) // no deadline: it must not wait
	require.ErrorIs(t, err, zkrecipes.ErrNotStarted)
	assert.Less(t, time.Since(start), time.Second)
	assert.Contains(t, err.Error(), "leader latch /elect/unstarted")
}

func TestCloseReportsTheEndOfTheTermThenEndsSubscriptions(t *testing.T) {
	cl := zktest.Standalone(t)
	a := newLatch(t, newClient(t, cl.Addrs()), "/elect/close", "a")
	sub := a.Subscribe()
	assert.False(t, (<-sub.Changes()).Leader, "first, where it stands")
	require.NoError(t, a.Start(context.Background()))
	assert.True(t, (<-sub.Changes()).Leader)
	term := term(a)
	require.NotNil(t, term)
	require.NoError(t, a.Close())
	end := <-sub.Changes()
	assert.False(t, end.Leader)
	assert.ErrorIs(t, end.Reason, zkrecipes.ErrClosed)
	assert.ErrorIs(t, term.Err(), zkrecipes.ErrClosed)
	_, open := <-sub.Changes()
	assert.False(t, open)
	require.NoError(t, a.Close(), "a second Close")
}

// The leader's link goes dead: it must learn before anyone else is elected,
// and nobody is elected while its session lives.
func TestCutOffLeaderLearnsBeforeAnotherIsElected(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	leaderClient := newClient(t, p.Addrs())
	a := newLatch(t, leaderClient, "/elect/cut", "a")
	b := newLatch(t, newClient(t, cl.Addrs()), "/elect/cut", "b")
	require.NoError(t, a.Start(context.Background()))
	ta, err := a.Await(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, b.Start(context.Background()))
	waitParticipants(t, newClient(t, cl.Addrs()), "/elect/cut", 2)
	sid := leaderClient.Session().ID

	p.Blackhole()
	<-ta.Done()
	learned := time.Now()
	assert.ErrorIs(t, ta.Err(), zkrecipes.ErrSuspended)
	assert.False(t, leading(a))
	tb, err := b.Await(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	elected := time.Now()
	assert.False(t, cl.SessionAlive(sid), "elected while the old leader's session lived")
	assert.True(t, learned.Before(elected))
	assert.Greater(t, tb.Token(), ta.Token())
	p.Heal()
}

// leaderAndFollower starts latch a, which leads (term ta), and latch b
// queued behind it, on path of a new server; obs is a third client.
func leaderAndFollower(t *testing.T, path string) (obs *framework.Client, a *leader.Latch, ta *hold.Hold, b *leader.Latch) {
	t.Helper()
	cl := zktest.Standalone(t)
	obs = newClient(t, cl.Addrs())
	a = newLatch(t, newClient(t, cl.Addrs()), path, "a")
	b = newLatch(t, newClient(t, cl.Addrs()), path, "b")
	require.NoError(t, a.Start(context.Background()))
	ta, err := a.Await(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, b.Start(context.Background()))
	waitParticipants(t, obs, path, 2)
	return obs, a, ta, b
}

// The leader's node deleted by someone else (an operator's deleteall) ends
// its term at once with zkrecipes.ErrNodeDeleted; the next participant leads, and the
// latch queues again behind it. (Before, the old leader went on leading
// beside the new one.)
func TestLeaderWhoseNodeIsDeletedStopsLeading(t *testing.T) {
	operator, a, ta, b := leaderAndFollower(t, "/elect/deleted")
	require.NoError(t, operator.Delete(ctxT(t, 10*time.Second), ta.Path(), -1))
	testkit.WaitClosed(t, ta.Done(), 10*time.Second, "the leader was not told its node was deleted")
	assert.ErrorIs(t, ta.Err(), zkrecipes.ErrNodeDeleted)
	tb, err := b.Await(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Greater(t, tb.Token(), ta.Token())
	waitParticipants(t, operator, "/elect/deleted", 2) // a queued again, behind b
	assert.False(t, leading(a))
}

// A term is released like every hold: the leader steps down, the next
// participant leads, and the latch queues again behind it. A second
// Release is zkrecipes.ErrReleased.
func TestTermReleaseStepsDown(t *testing.T) {
	_, _, ta, b := leaderAndFollower(t, "/elect/stepdown")
	require.NoError(t, ta.Release())
	assert.ErrorIs(t, ta.Err(), zkrecipes.ErrReleased)
	assert.ErrorIs(t, ta.Release(), zkrecipes.ErrReleased)
	tb, err := b.Await(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Greater(t, tb.Token(), ta.Token())
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		ids, err := b.Participants(context.Background())
		if assert.NoError(ct, err) {
			assert.Equal(ct, []string{"b", "a"}, ids, "a queued again, behind b")
		}
	}, 10*time.Second, 20*time.Millisecond)
}

func TestLeaderKeepsLeadingAfterABriefCut(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	a := newLatch(t, newClient(t, p.Addrs()), "/elect/brief", "a")
	b := newLatch(t, newClient(t, cl.Addrs()), "/elect/brief", "b")
	require.NoError(t, a.Start(context.Background()))
	t1, err := a.Await(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, b.Start(context.Background()))

	p.Cut()
	<-t1.Done()
	assert.ErrorIs(t, t1.Err(), zkrecipes.ErrSuspended)
	t2, err := a.Await(ctxT(t, 20*time.Second))
	require.NoError(t, err)
	assert.Equal(t, t1.Path(), t2.Path(), "re-checked on reconnect: same node, still first")
	assert.False(t, leading(b))
}

func TestKilledLeaderProcessIsReplacedWithinSessionTimeout(t *testing.T) {
	cl := zktest.Standalone(t)
	const sessionTimeout = 2 * time.Second
	cmd := testkit.Child(t, helperEnv, testkit.ChildSpec(strings.Join(cl.Addrs(), ","), "/elect/kill", "child", sessionTimeout), "leading")

	b := newLatch(t, newClient(t, cl.Addrs()), "/elect/kill", "b")
	require.NoError(t, b.Start(context.Background()))
	waitParticipants(t, newClient(t, cl.Addrs()), "/elect/kill", 2)
	killed := time.Now()
	require.NoError(t, cmd.Process.Kill())
	_, err := b.Await(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	assert.LessOrEqual(t, time.Since(killed), sessionTimeout+time.Second)
}

// watchLeaders follows each latch's terms and counts overlaps of trusted
// terms (from Await's return to Done).
func watchLeaders(t *testing.T, latches []*leader.Latch, stop <-chan struct{}) (overlaps, terms *atomic.Int64, wait func()) {
	overlaps, terms = new(atomic.Int64), new(atomic.Int64)
	var inside atomic.Int32
	var wg sync.WaitGroup
	for _, l := range latches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() { <-stop; cancel() }()
			for {
				term, err := l.Await(ctx)
				if err != nil {
					return
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				terms.Add(1)
				select {
				case <-term.Done():
				case <-stop:
				}
				inside.Add(-1)
				if ctx.Err() != nil {
					return
				}
			}
		}()
	}
	return overlaps, terms, wg.Wait
}

// Its latches reconnect with watches set, where go-zookeeper v1.0.4 races
// on lastZxid: it runs in the WithoutRace pass.
func TestAtMostOneLeaderWhileTheEnsembleLeaderDiesWithoutRace(t *testing.T) {
	testkit.SkipUnderRace(t)
	cl := zktest.Ensemble(t, 3)
	var latches []*leader.Latch
	for i := 0; i < 3; i++ {
		l := newLatch(t, newClient(t, cl.Addrs()), "/elect/ensemble", fmt.Sprint(i))
		require.NoError(t, l.Start(context.Background()))
		latches = append(latches, l)
	}
	stop := make(chan struct{})
	overlaps, terms, wait := watchLeaders(t, latches, stop)
	require.Eventually(t, func() bool { return terms.Load() >= 1 }, 30*time.Second, 10*time.Millisecond)
	cl.Leader(10 * time.Second).Kill()
	// Close the current leader so that leadership also moves while the
	// ensemble recovers.
	for _, l := range latches {
		if leading(l) {
			// With the ensemble electing, the delete may not go out in
			// time: it then finishes in the background, which is fine.
			if err := l.Close(); !errors.Is(err, zkrecipes.ErrDeferred) {
				require.NoError(t, err)
			}
			break
		}
	}
	require.Eventually(t, func() bool { return terms.Load() >= 2 }, 60*time.Second, 10*time.Millisecond)
	close(stop)
	wait()
	assert.Zero(t, overlaps.Load())
}

func TestSelectorRunsOneLeaderAtATimeAndRequeues(t *testing.T) {
	cl := zktest.Standalone(t)
	var inside atomic.Int32
	var overlaps atomic.Int64
	runs := map[string]*atomic.Int64{}
	var selectors []*leader.Selector
	for _, id := range []string{"a", "b", "c"} {
		runs[id] = new(atomic.Int64)
		s, err := leader.NewSelector(newClient(t, cl.Addrs()), "/elect/sel", func(ctx context.Context, h *hold.Hold) error {
			if inside.Add(1) > 1 {
				overlaps.Add(1)
			}
			runs[id].Add(1)
			time.Sleep(5 * time.Millisecond) // a short job
			inside.Add(-1)
			return nil
		}, leader.WithAutoRequeue(), leader.WithParticipantID(id))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		selectors = append(selectors, s)
	}
	for _, s := range selectors {
		require.NoError(t, s.Start(context.Background()))
	}
	require.Eventually(t, func() bool {
		return runs["a"].Load() >= 3 && runs["b"].Load() >= 3 && runs["c"].Load() >= 3
	}, 60*time.Second, 10*time.Millisecond)
	for _, s := range selectors {
		require.NoError(t, s.Close())
	}
	assert.Zero(t, overlaps.Load())
}

func TestSelectorPanicReleasesLeadershipAndIsReported(t *testing.T) {
	cl := zktest.Standalone(t)
	reported := make(chan error, 1)
	bad, err := leader.NewSelector(newClient(t, cl.Addrs()), "/elect/panic", func(context.Context, *hold.Hold) error {
		panic("boom")
	}, leader.WithErrorHandler(func(err error) { reported <- err }))
	require.NoError(t, err)
	t.Cleanup(func() { bad.Close() })
	ran := make(chan struct{})
	good, err := leader.NewSelector(newClient(t, cl.Addrs()), "/elect/panic", func(ctx context.Context, _ *hold.Hold) error {
		close(ran)
		<-ctx.Done()
		return nil
	})
	require.NoError(t, err)
	t.Cleanup(func() { good.Close() })

	require.NoError(t, bad.Start(context.Background()))
	assert.ErrorIs(t, <-reported, leader.ErrPanic)
	require.NoError(t, good.Start(context.Background()))
	select {
	case <-ran:
	case <-time.After(30 * time.Second):
		t.Fatal("the lock was left held after the panic")
	}
}

func TestSelectorCancelsTheJobWhenLeadershipIsInDoubt(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	cause := make(chan error, 1)
	started := make(chan struct{})
	s, err := leader.NewSelector(newClient(t, p.Addrs()), "/elect/doubt", func(ctx context.Context, _ *hold.Hold) error {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil
	})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	require.NoError(t, s.Start(context.Background()))
	<-started
	p.Blackhole()
	assert.ErrorIs(t, <-cause, zkrecipes.ErrSuspended)
	p.Heal()
}

func TestBadInput(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	_, err := leader.NewLatch(nil, "/e", leader.WithParticipantID("x"))
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	_, err = leader.NewLatch(c, "e", leader.WithParticipantID("x"))
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidPath)
	_, err = leader.NewSelector(c, "/e", nil)
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	l := newLatch(t, c, "/e/closed", "x")
	require.NoError(t, l.Close())
	assert.ErrorIs(t, l.Start(context.Background()), zkrecipes.ErrClosed)
	_, err = l.Await(ctxT(t, time.Second))
	assert.ErrorIs(t, err, zkrecipes.ErrClosed)
	l2 := newLatch(t, c, "/e/twice", "x")
	require.NoError(t, l2.Start(context.Background()))
	assert.ErrorIs(t, l2.Start(context.Background()), zkrecipes.ErrStarted)
	kids, _, err := c.Children(ctxT(t, time.Second), "/e/closed")
	if !errors.Is(err, zk.ErrNoNode) {
		assert.Empty(t, kids)
	}
}

// A selector's Held never hands out a term whose loss signal has fired,
// even while its Func has not returned yet.
func TestSelectorHeldHandsOutNoLostTermWithoutRace(t *testing.T) {
	testkit.SkipUnderRace(t) // a reconnect with watches set: go-zookeeper v1.0.4 races on lastZxid
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := testkit.Client(t, p.Addrs())
	leading := make(chan *hold.Hold, 1)
	release := make(chan struct{})
	s := newSelector(t, c, "/elect/selector-held-lost", func(ctx context.Context, term *hold.Hold) error {
		leading <- term
		<-release // a Func slow to notice its context
		return nil
	})
	require.NoError(t, s.Start(testkit.Ctx(t, 10*time.Second)))
	term := <-leading
	p.Blackhole()
	<-term.Done()
	_, ok := s.Held()
	assert.False(t, ok, "a term whose loss signal fired")
	close(release)
	p.Heal()
}
