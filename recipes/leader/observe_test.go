package leader_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/curator"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
)

// observe starts an observer of path on c that ends with the test.
func observe(t *testing.T, c *framework.Client, path string) *leader.Observer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	o, err := leader.Observe(ctx, c, path)
	require.NoError(t, err)
	// A stream whose ctx ends keeps what it queued for its reader until
	// it is read or closed: a test that stops reading closes it.
	t.Cleanup(o.Close)
	return o
}

// next waits for the observer's next change.
func next(t *testing.T, o *leader.Observer) leader.Leadership {
	t.Helper()
	select {
	case l, ok := <-o.Changes():
		require.True(t, ok, "the stream ended: %v", o.Err())
		return l
	case <-time.After(30 * time.Second):
		t.Fatal("no change within 30s")
		return leader.Leadership{}
	}
}

// quiet checks that no change comes within absenceWindow. Only call it
// once whatever could cause a change has been waited for.
func quiet(t *testing.T, o *leader.Observer, why string) {
	t.Helper()
	select {
	case l, ok := <-o.Changes():
		t.Fatalf("%s: got %+v (open: %v, err: %v)", why, l, ok, o.Err())
	case <-time.After(absenceWindow):
	}
}

// leads checks that l reports the term of latch or hold h.
func leads(t *testing.T, l leader.Leadership, id string, token int64) {
	t.Helper()
	assert.True(t, l.HasLeader(), "%+v", l)
	assert.Equal(t, id, l.ID)
	assert.Equal(t, token, l.Token)
	assert.NoError(t, l.Stale, "known current")
}

// staleLeads checks that l says the term of id with token may be stale:
// the observer's link dropped.
func staleLeads(t *testing.T, l leader.Leadership, id string, token int64) {
	t.Helper()
	assert.Equal(t, id, l.ID)
	assert.Equal(t, token, l.Token)
	assert.ErrorIs(t, l.Stale, zkrecipes.ErrStale)
}

func await(t *testing.T, l *leader.Latch) int64 {
	t.Helper()
	term, err := l.Await(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	return term.Token()
}

func TestObserveReportsTheCurrentLeaderFirst(t *testing.T) {
	obs, _, ta, _ := leaderAndFollower(t, "/observe/first")
	o := observe(t, obs, "/observe/first")
	first := next(t, o)
	leads(t, first, "a", ta.Token())
	assert.Equal(t, ta.Path(), first.Node)
	_, st, err := obs.Exists(ctxT(t, 10*time.Second), ta.Path())
	require.NoError(t, err)
	assert.Equal(t, st.Czxid, first.Token, "the token is the leader node's czxid")
	assert.True(t, first.Since.Equal(time.UnixMilli(st.Ctime)), "a leader found leading: since its node was made (%v, want %v)", first.Since, time.UnixMilli(st.Ctime))

	// Neither a participant queueing behind the leader nor a write to the
	// leader's node (Curator's revocation request) changes who leads.
	c := newLatch(t, obs, "/observe/first", "c") // the observer may take part
	require.NoError(t, c.Start(context.Background()))
	waitParticipants(t, obs, "/observe/first", 3)
	_, err = obs.Set(ctxT(t, 10*time.Second), ta.Path(), []byte("__REVOKE__"), -1)
	require.NoError(t, err)
	quiet(t, o, "a queued participant or a data change is no change of leader")
}

func TestObserveReportsNobodyLeadingAPathThatIsEmptyOrMissing(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	o := observe(t, obs, "/observe/missing/deep")
	first := next(t, o)
	assert.False(t, first.HasLeader(), "%+v", first)
	assert.Equal(t, leader.Leadership{}, first)

	a := newLatch(t, newClient(t, cl.Addrs()), "/observe/missing/deep", "a")
	require.NoError(t, a.Start(context.Background()))
	ta := await(t, a)
	leads(t, next(t, o), "a", ta)
	require.NoError(t, a.Close())
	gone := next(t, o)
	assert.False(t, gone.HasLeader(), "%+v", gone)
	assert.False(t, gone.Since.IsZero(), "a vacancy seen happening has a time")
	quiet(t, o, "nobody leads")
}

func TestObserveFollowsGracefulHandovers(t *testing.T) {
	obs, a, ta, b := leaderAndFollower(t, "/observe/close")
	o := observe(t, obs, "/observe/close")
	leads(t, next(t, o), "a", ta.Token())

	before := time.Now()
	require.NoError(t, a.Close())
	tb := await(t, b)
	nb := next(t, o)
	leads(t, nb, "b", tb)
	assert.Greater(t, nb.Token, ta.Token())
	assert.False(t, nb.Since.Before(before.Add(-time.Second)), "a handover seen live: since about when it was seen (%v, closed at %v)", nb.Since, before)

	require.NoError(t, b.Close())
	assert.False(t, next(t, o).HasLeader())
	c := newLatch(t, obs, "/observe/close", "c")
	require.NoError(t, c.Start(context.Background()))
	leads(t, next(t, o), "c", await(t, c))
	quiet(t, o, "c leads")
}

func TestObserveFollowsAKilledLeaderProcess(t *testing.T) {
	cl := zktest.Standalone(t)
	const sessionTimeout = 2 * time.Second
	obs := newClient(t, cl.Addrs())
	cmd := testkit.Child(t, helperEnv, testkit.ChildSpec(strings.Join(cl.Addrs(), ","), "/observe/kill", "child", sessionTimeout), "leading")
	b := newLatch(t, newClient(t, cl.Addrs()), "/observe/kill", "b")
	require.NoError(t, b.Start(context.Background()))
	waitParticipants(t, obs, "/observe/kill", 2)

	o := observe(t, obs, "/observe/kill")
	first := next(t, o)
	assert.Equal(t, "child", first.ID)
	require.NoError(t, cmd.Process.Kill())
	leads(t, next(t, o), "b", await(t, b))
	quiet(t, o, "b leads")
}

func TestObserveFollowsASelectorPath(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	tokens := make(chan int64, 2)
	var selectors []*leader.Selector
	for i, id := range []string{"s1", "s2"} {
		s := newSelector(t, newClient(t, cl.Addrs()), "/observe/sel", func(ctx context.Context, h *hold.Hold) error {
			tokens <- h.Token()
			<-ctx.Done()
			return nil
		}, leader.WithParticipantID(id))
		require.NoError(t, s.Start(context.Background()))
		waitParticipants(t, obs, "/observe/sel", i+1)
		selectors = append(selectors, s)
	}
	o := observe(t, obs, "/observe/sel")
	first := next(t, o)
	leads(t, first, "s1", <-tokens)
	assert.Contains(t, first.Node, "-lock-")

	require.NoError(t, selectors[0].Close())
	second := next(t, o)
	leads(t, second, "s2", <-tokens)
}

// The observer's own link goes down while the leader changes: once it is
// back, the stream has exactly that change, once. A cut during which
// nothing changes adds nothing.
func TestObserveOwnCutReportsExactlyTheChangesMadeDuringIt(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	// A longer session than testkit's, so that the observer notices the
	// dead link (at 2/3 of it) well before the server could expire it, and
	// reconnects well within it on a loaded machine (with 8 s, a CI run
	// beside other test suites once took long enough for go-zookeeper to
	// declare the session lost).
	obs := newClient(t, p.Addrs(), framework.WithSessionTimeout(15*time.Second))
	a := newLatch(t, newClient(t, cl.Addrs()), "/observe/cut", "a")
	b := newLatch(t, newClient(t, cl.Addrs()), "/observe/cut", "b")
	require.NoError(t, a.Start(context.Background()))
	ta := await(t, a)
	require.NoError(t, b.Start(context.Background()))
	waitParticipants(t, newClient(t, cl.Addrs()), "/observe/cut", 2)
	states := obs.Subscribe()
	defer states.Close()
	session := obs.Session().ID
	expectState(t, states, conn.StateConnected) // as it stands

	o := observe(t, obs, "/observe/cut")
	leads(t, next(t, o), "a", ta)

	// cutWhile runs change while the observer knows its link is down
	// (Suspended), then heals the link and waits for the reconnect.
	cutWhile := func(t *testing.T, change func()) {
		t.Helper()
		p.Blackhole()
		expectState(t, states, conn.StateSuspended)
		change()
		p.Heal()
		expectState(t, states, conn.StateReconnected)
		require.Equal(t, session, obs.Session().ID, "the cut outlived the session: this test is about cuts")
	}

	t.Run("nothing changes", func(t *testing.T) {
		p.Cut()
		expectState(t, states, conn.StateSuspended)
		expectState(t, states, conn.StateReconnected)
		staleLeads(t, next(t, o), "a", ta)
		leads(t, next(t, o), "a", ta) // current again, the same term
		quiet(t, o, "the same leader after a cut")
	})

	t.Run("the leader changes", func(t *testing.T) {
		var tb int64
		cutWhile(t, func() {
			require.NoError(t, a.Close())
			tb = await(t, b)
		})
		staleLeads(t, next(t, o), "a", ta)
		leads(t, next(t, o), "b", tb)
		quiet(t, o, "the change made during the cut, reported once")
	})

	t.Run("the same participant leads a new term", func(t *testing.T) {
		// b steps down and, alone, queues again and leads: same id, new
		// node and token. A change, as any new term.
		term := term(b)
		require.NotNil(t, term)
		var again int64
		cutWhile(t, func() {
			require.NoError(t, term.Release())
			again = await(t, b)
		})
		require.Greater(t, again, term.Token())
		staleLeads(t, next(t, o), "b", term.Token())
		leads(t, next(t, o), "b", again)
		quiet(t, o, "the new term, reported once")
	})
}

// expectState waits for the next state of a client that is not Connected
// again after Reconnected.
func expectState(t *testing.T, s *framework.Subscription[conn.Event], want conn.State) {
	t.Helper()
	select {
	case ev := <-s.Changes():
		require.Equal(t, want, ev.State, "%v", ev)
		if want == conn.StateReconnected {
			require.False(t, ev.NewSession, "%v", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no %v within 30s", want)
	}
}

// The observer's session expires: it looks again on its new session and
// reports a change only if the leader differs.
func TestObserveOwnSessionExpiryReportsOnlyRealChanges(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	obs := newClient(t, p.Addrs())
	a := newLatch(t, newClient(t, cl.Addrs()), "/observe/expiry", "a")
	b := newLatch(t, newClient(t, cl.Addrs()), "/observe/expiry", "b")
	require.NoError(t, a.Start(context.Background()))
	ta := await(t, a)
	require.NoError(t, b.Start(context.Background()))
	waitParticipants(t, newClient(t, cl.Addrs()), "/observe/expiry", 2)

	o := observe(t, obs, "/observe/expiry")
	leads(t, next(t, o), "a", ta)

	testkit.LoseSession(t, p, obs)
	staleLeads(t, next(t, o), "a", ta)
	leads(t, next(t, o), "a", ta) // current again on the new session
	quiet(t, o, "the same leader after the observer's session expired")

	p.Blackhole()
	require.NoError(t, a.Close())
	tb := await(t, b)
	testkit.LoseSession(t, p, obs)
	staleLeads(t, next(t, o), "a", ta)
	leads(t, next(t, o), "b", tb)
	quiet(t, o, "the change made while the session expired, reported once")

	// And the new session's watch works.
	require.NoError(t, b.Close())
	assert.False(t, next(t, o).HasLeader())
}

var curatorNode = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-(latch|lock)-\d{10}$`)

// Curator's own LeaderLatch and LeaderSelector, run by the Java agent, are
// observed as this package's are.
func TestObserveCuratorLatchAndSelector(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)

	t.Run("latch", func(t *testing.T) {
		java.Call(t, "latch-start j /observe/curator-latch java-1", "latch-started", 10*time.Second)
		java.Expect(t, "latch-leader j", 30*time.Second)
		o := observe(t, obs, "/observe/curator-latch")
		first := next(t, o)
		assert.Equal(t, "java-1", first.ID)
		assert.Regexp(t, curatorNode, framework.Base(first.Node))
		assert.Contains(t, first.Node, "-latch-")
		_, st, err := obs.Exists(ctxT(t, 10*time.Second), first.Node)
		require.NoError(t, err)
		assert.Equal(t, st.Czxid, first.Token)

		g := newLatch(t, newClient(t, cl.Addrs()), "/observe/curator-latch", "go-1")
		require.NoError(t, g.Start(context.Background()))
		waitParticipants(t, obs, "/observe/curator-latch", 2)
		java.Call(t, "latch-close j", "latch-closed", 10*time.Second)
		leads(t, next(t, o), "go-1", await(t, g))
	})

	t.Run("selector", func(t *testing.T) {
		java.Call(t, "selector-start s /observe/curator-sel java-s", "selector-started", 10*time.Second)
		java.Expect(t, "selector-leading s", 30*time.Second)
		o := observe(t, obs, "/observe/curator-sel")
		first := next(t, o)
		assert.Equal(t, "java-s", first.ID)
		assert.Regexp(t, curatorNode, framework.Base(first.Node))
		assert.Contains(t, first.Node, "-lock-")
		java.Send("selector-release s")
		java.Expect(t, "selector-released s", 10*time.Second)
		assert.False(t, next(t, o).HasLeader(), "Curator's selector left without requeueing")
		java.Call(t, "selector-close s", "selector-closed", 10*time.Second)
	})
}

// The stream ends, channel closed and goroutine gone, when its context
// ends or its client closes, and Err says which.
func TestObserveEndsWithItsContextOrItsClient(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	closing := newClient(t, cl.Addrs())
	before := testkit.LeakBase()

	ctx, cancel := context.WithCancel(context.Background())
	o, err := leader.Observe(ctx, c, "/observe/end")
	require.NoError(t, err)
	assert.NoError(t, o.Err(), "Err is nil while the stream runs")
	assert.False(t, next(t, o).HasLeader())
	cancel()
	ended(t, o)
	assert.ErrorIs(t, o.Err(), context.Canceled)

	// A reader that stopped reading does not keep it alive either.
	unread, err := leader.Observe(context.Background(), closing, "/observe/end")
	require.NoError(t, err)
	require.NoError(t, closing.Close())
	ended(t, unread)
	assert.ErrorIs(t, unread.Err(), zkrecipes.ErrClosed)
	assert.ErrorIs(t, unread.Err(), zkrecipes.ErrClosed)

	assert.NoError(t, goleak.Find(before...), "goroutines left by ended observers")
}

// A path the client may not read ends the stream with the server's
// refusal: looking again cannot cure it.
func TestObserveEndsOnAPathItMayNotRead(t *testing.T) {
	cl := zktest.Standalone(t)
	owner := newClient(t, cl.Addrs(), framework.WithDigestAuth("owner", "secret"))
	_, err := owner.Create(ctxT(t, 10*time.Second), "/observe/secret", nil,
		framework.WithParents(), framework.WithACL(zk.DigestACL(zk.PermAll, "owner", "secret")))
	require.NoError(t, err)

	o := observe(t, newClient(t, cl.Addrs()), "/observe/secret")
	ended(t, o)
	assert.ErrorIs(t, o.Err(), zk.ErrNoAuth)
	assert.Contains(t, o.Err().Error(), "/observe/secret")
}

// ended waits until o's channel is closed, dropping what it still holds.
func ended(t *testing.T, o *leader.Observer) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-o.Changes():
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the stream did not end within 10s")
		}
	}
}

func TestObserveRefusesBadInputWithTheSentinels(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	closed := newClient(t, cl.Addrs())
	require.NoError(t, closed.Close())
	observe := func(c *framework.Client, path string) func() error {
		return func() error {
			o, err := leader.Observe(context.Background(), c, path)
			if o != nil {
				t.Errorf("an Observer with the error %v", err)
			}
			return err
		}
	}
	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"nil client":    testkit.Fails(observe(nil, "/x"), zkrecipes.ErrInvalidArgument),
		"bad path":      testkit.Fails(observe(c, "x/"), zkrecipes.ErrInvalidPath),
		"dot-dot":       testkit.Fails(observe(c, "/x/../y"), zkrecipes.ErrInvalidPath),
		"closed client": testkit.Fails(observe(closed, "/x"), zkrecipes.ErrClosed, zkrecipes.ErrClosed),
		"root":          testkit.Fails(observe(c, "/"), zkrecipes.ErrInvalidPath),
	})
}

// A reader that never reads while the leader changes more than the bound
// allows is told, not skipped silently: once it reads, it gets at most
// the change being handed over, then the channel closes, Err wraps
// ErrFellBehind and names the path, and the observer's goroutine is gone.
// Observing again starts with the leader as it stands.
func TestObserveTellsASlowReaderItFellBehind(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	w := newClient(t, cl.Addrs())
	const path = "/observe/slow"
	o := observe(t, c, path)
	ctx := ctxT(t, 2*time.Minute)
	var prev string
	changes := 0
	for o.Err() == nil { // the reader reads nothing meanwhile
		require.NoError(t, ctx.Err(), "still not told after %d changes", changes)
		made, err := w.Create(ctx, path+"/latch-", []byte("x"),
			framework.WithMode(framework.EphemeralSequential), framework.WithParents())
		require.NoError(t, err)
		if prev != "" {
			require.NoError(t, w.Delete(ctx, prev, -1)) // made leads now
		}
		prev = made
		changes++
	}
	require.ErrorIs(t, o.Err(), zkrecipes.ErrFellBehind)
	assert.Contains(t, o.Err().Error(), path)
	var got []leader.Leadership
	for l := range o.Changes() {
		got = append(got, l)
	}
	assert.LessOrEqual(t, len(got), 1, "nothing after the change being handed over")
	o.Close() // its goroutines are gone, or this would wait

	again := observe(t, c, path)
	now := next(t, again)
	assert.Equal(t, framework.Base(prev), framework.Base(now.Node), "the leader as it stands, first")
	assert.Greater(t, changes, framework.DefaultBound)
}
