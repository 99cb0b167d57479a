package barrier_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
)

// The link faults every test below puts a waiter through: a reset of both
// directions, and each one-way loss, each held for well under the session
// timeout (the session lives on).
var linkFaults = map[string]func(p *zktest.Proxy){
	"cut":              func(p *zktest.Proxy) { p.Cut() },
	"blackhole":        func(p *zktest.Proxy) { p.Blackhole() },
	"replies-dropped":  func(p *zktest.Proxy) { p.DropReplies() },
	"requests-dropped": func(p *zktest.Proxy) { p.DropRequests() },
}

// A link fault wakes nothing by itself: Wait goes on while the barrier
// stands, and returns once it is removed, the removal made while the
// waiter was cut off included.
func TestWaitOutlastsLinkFaultsAndSeesRemovalMadeDuringThem(t *testing.T) {
	cl := zktest.Standalone(t)
	setter := newBarrier(t, newClient(t, cl.Addrs()), "/b/fault/gate")
	for name, fault := range linkFaults {
		t.Run(name, func(t *testing.T) {
			p := cl.NewProxy()
			w := newBarrier(t, newClient(t, p.Addrs()), "/b/fault/gate")
			require.NoError(t, setter.Set(ctxT(t, 10*time.Second)))
			got := async(func() error { return w.Wait(ctxT(t, 60*time.Second)) })
			blocked(t, got, "Wait")
			fault(p)
			blocked(t, got, "Wait during "+name)
			require.NoError(t, setter.Remove(ctxT(t, 10*time.Second)))
			p.Heal()
			require.NoError(t, returned(t, got, 30*time.Second, "Wait after "+name))
		})
	}
}

// Watches do not outlive a session: a waiter whose session expired must set
// its watch again on the new one, or it would sleep through the removal.
func TestWaitSeesRemovalAfterItsSessionExpired(t *testing.T) {
	cl := zktest.Standalone(t)
	setter := newBarrier(t, newClient(t, cl.Addrs()), "/b/expiry/gate")
	p := cl.NewProxy()
	wc := newClient(t, p.Addrs())
	w := newBarrier(t, wc, "/b/expiry/gate")
	require.NoError(t, setter.Set(ctxT(t, 10*time.Second)))
	got := async(func() error { return w.Wait(ctxT(t, 90*time.Second)) })
	blocked(t, got, "Wait")
	testkit.LoseSession(t, p, wc)
	blocked(t, got, "Wait after its session expired, the barrier standing")
	require.NoError(t, setter.Remove(ctxT(t, 10*time.Second)))
	require.NoError(t, returned(t, got, 30*time.Second, "Wait"))
}

// The server restarts under a barrier waiter and two members waiting for a
// third, then under the two leaving while the third is in: sessions survive
// a restart, so nobody returns early, nobody is lost, and all go on once
// the barrier falls and the third member comes, then leaves.
func TestServerRestartUnderWaitersLosesNobody(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	long := framework.WithSessionTimeout(15 * time.Second)
	setter := newBarrier(t, newClient(t, cl.Addrs(), long), "/b/restart/gate")
	w := newBarrier(t, newClient(t, cl.Addrs(), long), "/b/restart/gate")
	require.NoError(t, setter.Set(ctxT(t, 10*time.Second)))
	wait := async(func() error { return w.Wait(ctxT(t, 90*time.Second)) })
	var enters []<-chan error
	var ds []*barrier.DoubleBarrier
	for range 2 {
		d := newDouble(t, newClient(t, cl.Addrs(), long), "/b/restart/double", 3)
		ds = append(ds, d)
		enters = append(enters, async(func() error { return d.Enter(ctxT(t, 90*time.Second)) }))
	}
	members(t, obs, "/b/restart/double", 2)

	cl.Server(1).Restart()
	blocked(t, wait, "Wait across a restart")
	for _, e := range enters {
		blocked(t, e, "Enter across a restart")
	}
	members(t, obs, "/b/restart/double", 2) // both sessions came back

	require.NoError(t, setter.Remove(ctxT(t, 30*time.Second)))
	require.NoError(t, returned(t, wait, 30*time.Second, "Wait"))
	third := newDouble(t, newClient(t, cl.Addrs(), long), "/b/restart/double", 3)
	require.NoError(t, third.Enter(ctxT(t, 30*time.Second)))
	for _, e := range enters {
		require.NoError(t, returned(t, e, 30*time.Second, "Enter"))
	}

	// Again while two of them leave: they wait across it for the third.
	var leaves []<-chan error
	for _, d := range ds {
		leaves = append(leaves, async(func() error { return d.Leave(ctxT(t, 90*time.Second)) }))
	}
	cl.Server(1).Restart()
	for _, l := range leaves {
		blocked(t, l, "Leave across a restart, a member still in")
	}
	require.NoError(t, third.Leave(ctxT(t, 30*time.Second)))
	for _, l := range leaves {
		require.NoError(t, returned(t, l, 30*time.Second, "Leave"))
	}
	waitNodes(t, obs, "/b/restart/double", 0)
}

// Curator 5.4 returns from enter on any wake-up, a reconnect's included
// (GH-1290). Here a member waiting for a second one is cut off every way
// and stays waiting; the second member then lets both in.
func TestEnterIsNotWokenIntoSuccessByLinkFaults(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	p := cl.NewProxy()
	// A session that outlives each fault: the server may have last heard
	// the client a third of a session timeout before the fault began, and
	// after the heal go-zookeeper waits a second before it dials again;
	// with testkit's timeout that left well under a second.
	ca := newClient(t, p.Addrs(), framework.WithSessionTimeout(testkit.CutSessionTimeout))
	a := newDouble(t, ca, "/b/spurious", 2)
	got := async(func() error { return a.Enter(ctxT(t, 90*time.Second)) })
	members(t, obs, "/b/spurious", 1)
	for name, fault := range linkFaults {
		fault(p)
		blocked(t, got, "Enter during "+name)
		p.Heal()
		// Back on its session before the next fault: faults back to back,
		// with go-zookeeper's second between dials, would keep the client
		// off every link for the session timeout, and a session declared
		// lost ends Enter, as it must (TestSessionLostWhileEntering...).
		_, _, err := ca.Exists(ctxT(t, 30*time.Second), "/")
		require.NoError(t, err, "reconnected after "+name)
		blocked(t, got, "Enter after "+name)
	}
	b := newDouble(t, newClient(t, cl.Addrs()), "/b/spurious", 2)
	require.NoError(t, b.Enter(ctxT(t, 30*time.Second)))
	require.NoError(t, returned(t, got, 30*time.Second, "Enter"))
}

// A member whose session expires while it waits to enter is told, and its
// node (gone with the session) does not count: the others wait on.
func TestSessionLostWhileEnteringFailsEnterAndIsNotCounted(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	p := cl.NewProxy()
	ac := newClient(t, p.Addrs())
	a := newDouble(t, ac, "/b/lost-entering", 2)
	got := async(func() error { return a.Enter(ctxT(t, 90*time.Second)) })
	members(t, obs, "/b/lost-entering", 1)
	testkit.LoseSession(t, p, ac)
	assert.ErrorIs(t, returned(t, got, 30*time.Second, "Enter"), zkrecipes.ErrSessionLost)
	members(t, obs, "/b/lost-entering", 0)

	b := newDouble(t, newClient(t, cl.Addrs()), "/b/lost-entering", 2)
	bgot := async(func() error { return b.Enter(ctxT(t, 60*time.Second)) })
	members(t, obs, "/b/lost-entering", 1)
	blocked(t, bgot, "Enter with the lost member gone")
	require.NoError(t, a.Enter(ctxT(t, 30*time.Second)), "the member enters again on its new session")
	require.NoError(t, returned(t, bgot, 30*time.Second, "Enter"))
}

// A member whose session expires while it is entered has stopped being a
// member: the others leave without it, and its own Leave says so with
// zkrecipes.ErrSessionLost, never success (Curator's leave returns normally).
func TestSessionLostWhileEnteredFailsLeaveWithErrSessionLost(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	p := cl.NewProxy()
	ac := newClient(t, p.Addrs())
	a := newDouble(t, ac, "/b/lost-entered", 2)
	b := newDouble(t, newClient(t, cl.Addrs()), "/b/lost-entered", 2)
	ea := async(func() error { return a.Enter(ctxT(t, 30*time.Second)) })
	require.NoError(t, b.Enter(ctxT(t, 30*time.Second)))
	require.NoError(t, returned(t, ea, 30*time.Second, "Enter"))

	lb := async(func() error { return b.Leave(ctxT(t, 90*time.Second)) })
	blocked(t, lb, "Leave while the other member is in")
	testkit.LoseSession(t, p, ac)
	require.NoError(t, returned(t, lb, 30*time.Second, "Leave once the lost member's node is gone"))
	// Said even when the caller's deadline has passed already (a member
	// that woke from a long pause): the client knows its session is new.
	assert.ErrorIs(t, a.Leave(testkit.Expired()), zkrecipes.ErrSessionLost)
	assert.ErrorIs(t, a.Leave(ctxT(t, 10*time.Second)), barrier.ErrNotEntered, "the member is out")
	waitNodes(t, obs, "/b/lost-entered", 0)
}

// A member node deleted by someone else (an operator, a buggy client):
// Enter and Leave fail with zkrecipes.ErrNodeDeleted, and the member is out.
func TestMemberNodeDeletedBySomeoneElse(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	operator := newClient(t, cl.Addrs())

	t.Run("while entering", func(t *testing.T) {
		a := newDouble(t, newClient(t, cl.Addrs()), "/b/deleted/entering", 2)
		got := async(func() error { return a.Enter(ctxT(t, 60*time.Second)) })
		kids := members(t, obs, "/b/deleted/entering", 1)
		require.NoError(t, operator.Delete(context.Background(), "/b/deleted/entering/"+kids[0], -1))
		assert.ErrorIs(t, returned(t, got, 30*time.Second, "Enter"), zkrecipes.ErrNodeDeleted)
		assert.ErrorIs(t, a.Leave(ctxT(t, time.Second)), barrier.ErrNotEntered)
	})
	t.Run("while entered", func(t *testing.T) {
		ds := enterAll(t, cl, "/b/deleted/entered", 2)
		require.NoError(t, operator.Delete(context.Background(), ds[0].Node(), -1))
		require.NoError(t, ds[1].Leave(ctxT(t, 30*time.Second)))
		assert.ErrorIs(t, ds[0].Leave(ctxT(t, 30*time.Second)), zkrecipes.ErrNodeDeleted)
		waitNodes(t, obs, "/b/deleted/entered", 0)
	})
}

// Members leave together while one of them is cut off every way in turn,
// mid-leave: everyone's Leave returns nil and nothing is left. Its
// members reconnect with watches set, where go-zookeeper races.
func TestLeaveCompletesThroughLinkFaultsWithoutRace(t *testing.T) {
	testkit.SkipUnderRace(t)
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	for name, fault := range linkFaults {
		t.Run(name, func(t *testing.T) {
			path := "/b/leave-fault/" + name
			p := cl.NewProxy()
			// A session that outlives the fault healed once the client
			// has noticed it (testkit.CutSessionTimeout's doc).
			ac := newClient(t, p.Addrs(), framework.WithSessionTimeout(testkit.CutSessionTimeout))
			a := newDouble(t, ac, path, 3)
			others := []*barrier.DoubleBarrier{
				newDouble(t, newClient(t, cl.Addrs()), path, 3),
				newDouble(t, newClient(t, cl.Addrs()), path, 3),
			}
			ea := async(func() error { return a.Enter(ctxT(t, 30*time.Second)) })
			e1 := async(func() error { return others[0].Enter(ctxT(t, 30*time.Second)) })
			require.NoError(t, others[1].Enter(ctxT(t, 30*time.Second)))
			require.NoError(t, returned(t, ea, 30*time.Second, "Enter"))
			require.NoError(t, returned(t, e1, 30*time.Second, "Enter"))

			la := async(func() error { return a.Leave(ctxT(t, 60*time.Second)) })
			l0 := async(func() error { return others[0].Leave(ctxT(t, 60*time.Second)) })
			s := ac.Session() // taken while the link is up: its Suspended is the fault
			fault(p)
			l1 := async(func() error { return others[1].Leave(ctxT(t, 60*time.Second)) })
			testkit.WaitClosed(t, s.Suspended, 10*time.Second, "the fault's suspension") // the session outlives it
			p.Heal()
			for _, l := range []<-chan error{la, l0, l1} {
				require.NoError(t, returned(t, l, 30*time.Second, "Leave"))
			}
			waitNodes(t, obs, path, 0)
		})
	}
}

// An Enter that gives up while its member node's create is still on its
// way leaves no node behind when the create lands after Enter returned: a
// member node of a live session would count in every round that follows.
// (Found by the chaos suite across a server restart: Enter's cleanup ran
// at once, found nothing, and the create landed later.) The late create
// and the cleanup race on the wire; Drain waits for the cleanup, so a
// cleanup sent at once is over before the late create lands, and the
// rounds make sure the order is no accident.
func TestEnterThatGivesUpWhileItsCreateIsOnItsWayLeavesNoMember(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	_, err := obs.Create(testkit.Ctx(t, 30*time.Second), "/b", nil)
	require.NoError(t, err)
	for round := range 12 {
		path := fmt.Sprintf("/b/abandoned-%d", round)
		d := newDouble(t, c, path, 2)
		// The barrier's directory is missing (a container the server
		// reaped between rounds, say): the member's create fails for lack
		// of it, and the attempt makes it, then creates the member again.
		// Enter gives up while the directory's create is on its way.
		p.StallRequestsFrom(zktest.OpCreateContainer)
		ctx, cancel := context.WithCancel(context.Background())
		enter := async(func() error { return d.Enter(ctx) })
		require.Eventually(t, p.Stalled, 30*time.Second, time.Millisecond, "the directory's create was never sent")
		cancel()
		require.ErrorIs(t, returned(t, enter, 30*time.Second, "Enter"), context.Canceled)
		p.Release() // the abandoned attempt goes on to create the member
		require.NoError(t, c.Drain(testkit.Ctx(t, 30*time.Second)))
		kids, err := testkit.List(obs, path)
		require.NoError(t, err)
		require.Empty(t, kids, "round %d: a member node outlived the Enter that gave up", round)
		d.Close()
	}
}
