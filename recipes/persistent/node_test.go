package persistent_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/persistent"
)

func TestEphemeralNodeIsMadeWithItsDataAndDeletedAtClose(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	n := started(t, c, "/pn/plain/member", []byte("hello"))
	st := n.Status()
	require.True(t, st.InPlace)
	assert.Equal(t, "/pn/plain/member", st.Path)
	assert.Equal(t, "/pn/plain/member", n.ActualPath())
	assert.Equal(t, c.Session().ID, st.Owner)
	data, stat := onServer(t, c, "/pn/plain/member")
	require.NotNil(t, stat)
	assert.Equal(t, "hello", string(data))
	assert.Equal(t, c.Session().ID, stat.EphemeralOwner)

	require.NoError(t, n.Close())
	require.NoError(t, n.Close(), "idempotent")
	require.NoError(t, c.Drain(ctxT(t, 10*time.Second)))
	_, stat = onServer(t, c, "/pn/plain/member")
	assert.Nil(t, stat, "the node outlived Close")
	assert.ErrorIs(t, n.Err(), zkrecipes.ErrClosed)
}

// Curator's layout: "_c_<uuid>-<name><10 digits>", and a re-made node
// keeps its whole name.
func TestProtectedSequentialNodeHasCuratorsNameAndKeepsIt(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	other := newClient(t, cl.Addrs())
	n := started(t, c, "/pn/prot/worker-", []byte("a"), persistent.Protected(), persistent.Sequential())
	first := n.Status()
	assert.Regexp(t, regexp.MustCompile(`^/pn/prot/_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-worker-\d{10}$`), first.Path)
	assert.True(t, framework.IsProtected(framework.Base(first.Path)))

	require.NoError(t, other.Delete(ctxT(t, 10*time.Second), first.Path, -1))
	again := waitInPlace(t, n, other, first.Czxid, "a")
	assert.Equal(t, first.Path, again.Path, "the name changed on re-creation")
	assert.Equal(t, []string{framework.Base(first.Path)}, testkit.Children(t, other, "/pn/prot"))
}

func TestNodeDeletedBySomeoneElseIsMadeAgain(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	other := newClient(t, cl.Addrs())
	n := started(t, c, "/pn/deleted/x", []byte("d"))
	sub := n.Subscribe()
	defer sub.Close()
	first := <-sub.Changes()
	require.True(t, first.InPlace)

	require.NoError(t, other.Delete(ctxT(t, 10*time.Second), "/pn/deleted/x", -1))
	waitInPlace(t, n, other, first.Czxid, "d")
	// The subscription saw it go and come back.
	var sawGone bool
	for st := range sub.Changes() {
		if !st.InPlace {
			sawGone = true
			assert.ErrorIs(t, st.Err, persistent.ErrNotInPlace)
		} else if st.Czxid > first.Czxid {
			break
		}
	}
	assert.True(t, sawGone, "no status said the node was gone")
}

func TestNodeIsMadeAgainAfterSessionExpiry(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	observer := newClient(t, cl.Addrs())
	n := started(t, c, "/pn/expiry/x", []byte("v1"), persistent.Protected())
	first := n.Status()
	oldSession := c.Session().ID

	testkit.LoseSession(t, p, c)
	again := waitInPlace(t, n, observer, first.Czxid, "v1")
	assert.Equal(t, first.Path, again.Path)
	assert.Equal(t, c.Session().ID, again.Owner)
	assert.NotEqual(t, oldSession, again.Owner)
}

// Set while the node is away (the link is down, then the session
// expires): the node is made again with the data last set.
func TestSetIsFollowedAcrossRecreation(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	observer := newClient(t, cl.Addrs())
	n := started(t, c, "/pn/follow/x", []byte("v1"))
	first := n.Status()

	require.NoError(t, n.Set(ctxT(t, 10*time.Second), []byte("v2")))
	data, _ := onServer(t, observer, "/pn/follow/x")
	assert.Equal(t, "v2", string(data))

	old := c.Session()
	p.Blackhole()
	waitNotInPlace(t, n, zkrecipes.ErrSuspended)
	// The link is down: Set keeps the data and gives up waiting with ctx.
	assert.ErrorIs(t, n.Set(ctxT(t, 200*time.Millisecond), []byte("v3")), context.DeadlineExceeded)
	assert.Equal(t, "v3", string(n.Data()))
	zktest.ExpireSession(t, p, old.ID) // heals p once the server has expired it
	again := waitInPlace(t, n, observer, first.Czxid, "v3")
	assert.NotEqual(t, old.ID, again.Owner)
}

// A cut link (both ways, then one way) that heals before the session
// expires: the node stays the same node, said not in place while the link
// is down, and in place again after.
func TestNodeSurvivesCutsOnTheSameSession(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	observer := newClient(t, cl.Addrs())
	n := started(t, c, "/pn/cut/x", []byte("c"))
	first := n.Status()
	for _, fault := range []struct {
		name string
		do   func()
	}{{"cut", p.Cut}, {"blackhole", p.Blackhole}, {"replies dropped", p.DropReplies}, {"requests dropped", p.DropRequests}} {
		t.Run(fault.name, func(t *testing.T) {
			fault.do()
			waitNotInPlace(t, n, zkrecipes.ErrSuspended)
			p.Heal()
			st := waitInPlace(t, n, observer, 0, "c")
			if c.Session().ID == first.Owner {
				assert.Equal(t, first.Czxid, st.Czxid, "the same session's node was made again")
			}
		})
	}
}

func TestNodeIsBackAfterServerRestart(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	n := started(t, c, "/pn/restart/x", []byte("r"))
	cl.Servers()[0].Restart()
	observer := newClient(t, cl.Addrs())
	waitInPlace(t, n, observer, 0, "r")
	require.NoError(t, n.Set(ctxT(t, 30*time.Second), []byte("r2")))
	waitInPlace(t, n, observer, 0, "r2")
}

// An ephemeral node of another session at the path is never taken over:
// the Node says whose it is, and makes its own once it is gone.
func TestEphemeralOfAnotherSessionIsWaitedFor(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	squatter := newClient(t, cl.Addrs())
	_, err := squatter.Create(ctxT(t, 10*time.Second), "/pn/taken/x", []byte("theirs"), framework.WithMode(framework.Ephemeral), framework.WithParents())
	require.NoError(t, err)
	n, err := persistent.New(c, "/pn/taken/x", []byte("mine"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close() })
	startErr := make(chan error, 1)
	go func() { startErr <- n.Start(ctxT(t, 60*time.Second)) }()
	waitNotInPlace(t, n, persistent.ErrOtherOwner)
	data, _ := onServer(t, c, "/pn/taken/x")
	assert.Equal(t, "theirs", string(data), "wrote into another session's node")

	require.NoError(t, squatter.Close())
	require.NoError(t, <-startErr)
	waitInPlace(t, n, c, 0, "mine")
}

func TestPersistentNodeOutlivesTheSessionAndCloseDeletesIt(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	observer := newClient(t, cl.Addrs())
	n := started(t, c, "/pn/persistent/x-", []byte("p"), persistent.Persistent(), persistent.Sequential())
	first := n.Status()
	assert.Regexp(t, `^/pn/persistent/_c_[0-9a-f-]{36}-x-\d{10}$`, first.Path)
	assert.Zero(t, first.Owner)
	testkit.LoseSession(t, p, c)
	st := waitInPlace(t, n, observer, 0, "p")
	assert.Equal(t, first.Czxid, st.Czxid, "a persistent node was made again after a session loss")
	require.NoError(t, n.Close())
	require.NoError(t, c.Drain(ctxT(t, 10*time.Second)))
	_, stat := onServer(t, observer, first.Path)
	assert.Nil(t, stat)
}

// A start that cannot finish (the server is away) gives up with ctx and
// leaves nothing behind; the Node can start again.
func TestStartThatGivesUpLeavesNothing(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	observer := newClient(t, cl.Addrs())
	n, err := persistent.New(c, "/pn/giveup/x", []byte("g"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close() })
	p.Blackhole()
	assert.ErrorIs(t, n.Start(ctxT(t, 300*time.Millisecond)), context.DeadlineExceeded)
	assert.ErrorIs(t, n.Err(), zkrecipes.ErrNotStarted)
	p.Heal()
	require.NoError(t, n.Start(ctxT(t, 30*time.Second)))
	waitInPlace(t, n, observer, 0, "g")
}
