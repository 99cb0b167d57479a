package cache_test

// Every fault between a cache and the server: the cache says its view may
// be stale while it cannot know, and once the link is back it has read
// everything again and delivered exactly the events that take its old
// view to the server's (the mirror checks that nothing is reported twice
// and nothing goes back). None of this is a sleep: each step waits for
// what it needs.

import (
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// faultSetup is a tree cache behind its own proxy and a writer on a direct
// link.
type faultSetup struct {
	cl     *zktest.Cluster
	p      *zktest.Proxy
	client *framework.Client
	writer *framework.Client
	cache  *cache.Cache
	m      *mirror
	path   string
}

func newFaultSetup(t *testing.T, path string, opts ...zktest.Option) *faultSetup {
	return newFaultSetupWith(t, path, nil, opts...)
}

// newFaultSetupWith is newFaultSetup with clientOpts for the cache's client.
func newFaultSetupWith(t *testing.T, path string, clientOpts []framework.Option, opts ...zktest.Option) *faultSetup {
	cl := zktest.Standalone(t, opts...)
	p := cl.NewProxy()
	f := &faultSetup{cl: cl, p: p, client: newClient(t, p.Addrs(), clientOpts...), writer: newClient(t, cl.Addrs()), path: path}
	for _, n := range []string{"/a", "/a/x", "/b", "/c"} {
		create(t, f.writer, path+n, n)
	}
	f.cache = newCache(t, f.client, path, cache.Tree(cache.AnyDepth))
	f.m = newMirror(t, f.cache)
	f.agrees(t)
	return f
}

func (f *faultSetup) agrees(t *testing.T) {
	t.Helper()
	waitAgrees(t, f.cache, f.m, f.writer, "tree", cache.AnyDepth)
}

// changeAll changes the tree in every way: a change, a create, a delete,
// and a node deleted and made again by someone else (with the same data
// and version).
func (f *faultSetup) changeAll(t *testing.T) {
	t.Helper()
	set(t, f.writer, f.path+"/b", "b changed")
	create(t, f.writer, f.path+"/d/e", "new")
	del(t, f.writer, f.path+"/c")
	del(t, f.writer, f.path+"/a")
	create(t, f.writer, f.path+"/a", "/a")
}

// waitStale waits until the cache says its view may be stale, for reason.
func (f *faultSetup) waitStale(t *testing.T, reason error) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		err := f.cache.Err()
		assert.ErrorIs(ct, err, zkrecipes.ErrStale)
		assert.ErrorIs(ct, err, reason)
	}, 60*time.Second, 10*time.Millisecond)
}

// caughtUp checks the cache after a fault: its view is the server's, it
// said stale and then current, the node deleted and made again was a
// delete and a create (its new incarnation), and a change after the fault
// arrives too.
func (f *faultSetup) caughtUp(t *testing.T, before int) {
	t.Helper()
	f.agrees(t)
	types := f.m.types()[before:]
	stale := slices.Index(types, "stale")
	require.GreaterOrEqual(t, stale, 0, "no stale event: %v", types)
	assert.Contains(t, types[stale:], "current", "no current event after stale: %v", types)
	a, ok, err := f.cache.Get(f.path + "/a")
	require.NoError(t, err)
	require.True(t, ok)
	_, st, err := f.writer.Get(ctxT(t, 10*time.Second), f.path+"/a")
	require.NoError(t, err)
	assert.Equal(t, st.Czxid, a.Stat.Czxid, "the new incarnation")
	assert.NotContains(t, types, "changed "+f.path+"/a", "made again is not a change")
	assert.Contains(t, types, "deleted "+f.path+"/a/x")

	n := f.m.len()
	set(t, f.writer, f.path+"/b", "after")
	waitTypes(t, f.m, n, "changed "+f.path+"/b")
}

func TestCutLinkMissesNoChange(t *testing.T) {
	f := newFaultSetup(t, "/fault/cut")
	n := f.m.len()
	f.p.Cut()
	f.changeAll(t)
	f.caughtUp(t, n)
}

// A partition shorter than the session: the cache reports Suspended, the
// session survives (and with it the watches), and what changed meanwhile
// arrives after.
//
// The session is testkit.CutSessionTimeout: with testkit's, the client
// learns of the cut at 2/3 of it, go-zookeeper waits a second before it
// dials again, and the server could expire the session first.
func TestBlackholeReportsStaleThenCatchesUp(t *testing.T) {
	f := newFaultSetupWith(t, "/fault/blackhole", []framework.Option{framework.WithSessionTimeout(testkit.CutSessionTimeout)})
	n := f.m.len()
	session := f.client.Session().ID
	f.p.Blackhole()
	f.changeAll(t)
	f.waitStale(t, zkrecipes.ErrSuspended)
	f.p.Heal()
	f.caughtUp(t, n)
	assert.Equal(t, session, f.client.Session().ID, "the session lived on")
}

// One way: the server's watch events still reach the cache but none of its
// requests (reads, pings) reach the server. An event proves nothing: the
// cache stays stale until its reads are answered.
func TestRequestsDroppedReportsStaleUntilReadsAreAnswered(t *testing.T) {
	f := newFaultSetup(t, "/fault/requests")
	n := f.m.len()
	f.p.DropRequests()
	f.changeAll(t)
	f.waitStale(t, zkrecipes.ErrSuspended)
	f.p.Heal()
	f.caughtUp(t, n)
}

// The other way: requests arrive, replies are lost.
func TestRepliesDroppedReportsStaleThenCatchesUp(t *testing.T) {
	f := newFaultSetup(t, "/fault/replies")
	n := f.m.len()
	f.p.DropReplies()
	f.changeAll(t)
	f.waitStale(t, zkrecipes.ErrSuspended)
	f.p.Heal()
	f.caughtUp(t, n)
}

// The session expires: its watches are gone with it, and the cache reads
// everything again, with new watches, under the new session.
func TestSessionExpiryMissesNoChange(t *testing.T) {
	f := newFaultSetup(t, "/fault/expiry")
	n := f.m.len()
	old := f.client.Session()
	zktest.ExpireSession(t, f.p, old.ID)
	f.changeAll(t) // while the client has not learnt its session is gone
	testkit.WaitClosed(t, old.Lost, 30*time.Second, "the client did not learn its session was lost")
	f.caughtUp(t, n)
	assert.Contains(t, f.m.types()[n:], "stale")
	assert.NotEqual(t, old.ID, f.client.Session().ID)
	// The new watches work: a change under the new session arrives.
	nn := f.m.len()
	create(t, f.writer, f.path+"/a/y", "y")
	waitTypes(t, f.m, nn, "created "+f.path+"/a/y")
}

// The client declares its session lost after a session timeout of silence,
// before the server says so: the cache says so too.
func TestPartitionLongerThanTheSessionReportsSessionLost(t *testing.T) {
	f := newFaultSetup(t, "/fault/lost")
	n := f.m.len()
	f.p.Blackhole()
	defer f.p.Heal()
	f.changeAll(t)
	f.waitStale(t, zkrecipes.ErrSessionLost)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		var last cache.Event
		for _, ev := range f.m.snapshotHistory() {
			if ev.Type == cache.Stale {
				last = ev
			}
		}
		assert.ErrorIs(ct, last.Err, zkrecipes.ErrSessionLost, "a Stale event says the session is lost")
	}, 30*time.Second, 10*time.Millisecond)
	f.p.Heal()
	f.caughtUp(t, n)
}

func TestServerRestartMissesNoChange(t *testing.T) {
	f := newFaultSetup(t, "/fault/restart", zktest.WithDurable())
	n := f.m.len()
	f.cl.Servers()[0].Restart()
	f.changeAll(t)
	f.caughtUp(t, n)
}

// Writes made during a gap whose net effect is nothing (a node made and
// deleted again) give no event at all; the others exactly one each.
func TestGapReportsOnlyTheDifference(t *testing.T) {
	f := newFaultSetup(t, "/fault/difference")
	n := f.m.len()
	f.p.Blackhole()
	create(t, f.writer, f.path+"/brief", "")
	del(t, f.writer, f.path+"/brief")
	set(t, f.writer, f.path+"/b", "1")
	set(t, f.writer, f.path+"/b", "2")
	f.waitStale(t, zkrecipes.ErrSuspended)
	f.p.Heal()
	f.agrees(t)
	assert.Equal(t, []string{"changed " + f.path + "/b"}, f.m.nodeEventsSince(n))
	_, _, err := f.writer.Get(ctxT(t, 10*time.Second), f.path+"/brief")
	assert.ErrorIs(t, err, zk.ErrNoNode)
}
