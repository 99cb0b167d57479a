package barrier_test

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
)

func TestMain(m *testing.M) {
	os.Exit(zktest.Main(m))
}

// absenceWindow is how long a test watches for a return that must not
// happen. Absence cannot be proven by waiting for an event; the window is
// taken once the caller has started waiting (for a member, once its node is
// on the server), so a wrong return would come within a few round trips,
// far inside it.
const absenceWindow = time.Second

var (
	newClient = testkit.Client
	ctxT      = testkit.Ctx
	nodes     = testkit.Children
	waitNodes = testkit.WaitChildren
)

func newBarrier(t testing.TB, c *framework.Client, path string, opts ...barrier.Option) *barrier.Barrier {
	t.Helper()
	b, err := barrier.New(c, path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return b
}

func newDouble(t testing.TB, c *framework.Client, path string, qty int, opts ...barrier.Option) *barrier.DoubleBarrier {
	t.Helper()
	d, err := barrier.NewDouble(c, path, qty, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

// async runs f on a goroutine of its own; its error arrives on the channel.
func async(f func() error) <-chan error {
	out := make(chan error, 1)
	go func() { out <- f() }()
	return out
}

func returned(t testing.TB, got <-chan error, within time.Duration, what string) error {
	t.Helper()
	select {
	case err := <-got:
		return err
	case <-time.After(within):
		t.Fatalf("%s did not return within %v", what, within)
		return nil
	}
}

// blocked checks that an asynchronous call stays blocked (see
// absenceWindow).
func blocked(t testing.TB, got <-chan error, what string) {
	t.Helper()
	select {
	case err := <-got:
		t.Fatalf("%s returned (err=%v) while it must wait", what, err)
	case <-time.After(absenceWindow):
	}
}

// members waits until the double barrier at path has n member nodes (the
// ready node aside) and returns them.
func members(t testing.TB, obs *framework.Client, path string, n int) []string {
	t.Helper()
	var out []string
	require.Eventually(t, func() bool {
		kids, err := testkit.List(obs, path)
		if err != nil {
			return false
		}
		out = slices.DeleteFunc(kids, func(k string) bool { return k == "ready" })
		return len(out) == n
	}, 30*time.Second, 10*time.Millisecond, "%d members under %s", n, path)
	return out
}

var memberNode = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestSetMakesCuratorNodeAndWaitReturnsOnlyOnceRemoved(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	b := newBarrier(t, newClient(t, cl.Addrs()), "/b/basic/gate", barrier.WithParticipantID("setter-1"))

	require.NoError(t, b.Set(ctxT(t, 10*time.Second)))
	require.NoError(t, b.Set(ctxT(t, 10*time.Second)), "a second Set is no error, as Curator's")
	data, st, err := obs.Get(context.Background(), "/b/basic/gate")
	require.NoError(t, err)
	assert.Equal(t, "setter-1", string(data))
	assert.Zero(t, st.EphemeralOwner, "the barrier is persistent")

	w := newBarrier(t, newClient(t, cl.Addrs()), "/b/basic/gate")
	got := async(func() error { return w.Wait(ctxT(t, 60*time.Second)) })
	blocked(t, got, "Wait on a set barrier")

	require.NoError(t, b.Remove(ctxT(t, 10*time.Second)))
	require.NoError(t, returned(t, got, 10*time.Second, "Wait after Remove"))
	require.NoError(t, b.Remove(ctxT(t, 10*time.Second)), "a second Remove is no error, as Curator's")
	require.NoError(t, w.Wait(ctxT(t, 10*time.Second)), "Wait on a removed barrier returns at once")
}

func TestBarrierDeletedBySomeoneElseWakesEveryWaiter(t *testing.T) {
	cl := zktest.Standalone(t)
	operator := newClient(t, cl.Addrs())
	b := newBarrier(t, newClient(t, cl.Addrs()), "/b/other/gate")
	require.NoError(t, b.Set(ctxT(t, 10*time.Second)))
	var waits []<-chan error
	for range 3 {
		w := newBarrier(t, newClient(t, cl.Addrs()), "/b/other/gate")
		waits = append(waits, async(func() error { return w.Wait(ctxT(t, 60*time.Second)) }))
	}
	for _, got := range waits {
		blocked(t, got, "Wait")
	}
	require.NoError(t, operator.Delete(context.Background(), "/b/other/gate", -1))
	for _, got := range waits {
		require.NoError(t, returned(t, got, 10*time.Second, "Wait after an outside delete"))
	}
}

func TestWaitEndsWithItsContextAndLeavesTheBarrier(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	b := newBarrier(t, newClient(t, cl.Addrs()), "/b/timeout/gate")
	require.NoError(t, b.Set(ctxT(t, 10*time.Second)))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, b.Wait(ctx), context.DeadlineExceeded)
	ok, _, err := obs.Exists(context.Background(), "/b/timeout/gate")
	require.NoError(t, err)
	assert.True(t, ok)
}

func TestDoubleBarrierEntersOnlyWhenEveryMemberArrived(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	const path = "/b/double/enter"
	var ds []*barrier.DoubleBarrier
	for i := range 3 {
		ds = append(ds, newDouble(t, newClient(t, cl.Addrs()), path, 3, barrier.WithParticipantID("m"+string(rune('0'+i)))))
	}
	e0 := async(func() error { return ds[0].Enter(ctxT(t, 60*time.Second)) })
	e1 := async(func() error { return ds[1].Enter(ctxT(t, 60*time.Second)) })
	kids := members(t, obs, path, 2)
	for _, k := range kids {
		assert.Regexp(t, memberNode, k)
		data, st, err := obs.Get(context.Background(), path+"/"+k)
		require.NoError(t, err)
		assert.NotZero(t, st.EphemeralOwner, "members are ephemeral")
		assert.Regexp(t, `^m[01]$`, string(data))
	}
	blocked(t, e0, "Enter with 2 of 3 members")
	blocked(t, e1, "Enter with 2 of 3 members")

	require.NoError(t, ds[2].Enter(ctxT(t, 30*time.Second)))
	require.NoError(t, returned(t, e0, 10*time.Second, "Enter"))
	require.NoError(t, returned(t, e1, 10*time.Second, "Enter"))
	data, st, err := obs.Get(context.Background(), path+"/ready")
	require.NoError(t, err)
	assert.Zero(t, st.EphemeralOwner, "ready is persistent, as Curator's")
	assert.Regexp(t, `^m[012]$`, string(data), "ready carries its maker's id, as Curator's its default data")
	for _, d := range ds {
		assert.Contains(t, nodes(t, obs, path), framework.Base(d.Node()))
	}
}

func TestDoubleBarrierLeavesOnlyWhenEveryMemberLeft(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	const path = "/b/double/leave"
	ds := enterAll(t, cl, path, 3)
	// Whichever member is lowest, the two first leavers wait for the third.
	l0 := async(func() error { return ds[0].Leave(ctxT(t, 60*time.Second)) })
	l1 := async(func() error { return ds[1].Leave(ctxT(t, 60*time.Second)) })
	blocked(t, l0, "Leave with a member still in")
	blocked(t, l1, "Leave with a member still in")
	assert.Contains(t, nodes(t, obs, path), framework.Base(ds[2].Node()))

	require.NoError(t, ds[2].Leave(ctxT(t, 30*time.Second)))
	require.NoError(t, returned(t, l0, 10*time.Second, "Leave"))
	require.NoError(t, returned(t, l1, 10*time.Second, "Leave"))
	waitNodes(t, obs, path, 0) // no member, no ready node
	assert.ErrorIs(t, ds[0].Leave(ctxT(t, time.Second)), barrier.ErrNotEntered)
}

// A member that is the lowest and leaves first waits too (it watches the
// highest): try every position as the one that does not leave.
func TestNoMemberLeavesBeforeTheLastOneLeaves(t *testing.T) {
	cl := zktest.Standalone(t)
	for stay := range 3 {
		path := "/b/double/order" + string(rune('0'+stay))
		ds := enterAll(t, cl, path, 3)
		slices.SortFunc(ds, func(a, b *barrier.DoubleBarrier) int { return strings.Compare(a.Node(), b.Node()) })
		var leaves []<-chan error
		for i, d := range ds {
			if i != stay {
				leaves = append(leaves, async(func() error { return d.Leave(ctxT(t, 60*time.Second)) }))
			}
		}
		for _, l := range leaves {
			blocked(t, l, "Leave before the last member leaves")
		}
		require.NoError(t, ds[stay].Leave(ctxT(t, 30*time.Second)))
		for _, l := range leaves {
			require.NoError(t, returned(t, l, 10*time.Second, "Leave"))
		}
	}
}

func TestDoubleBarrierCanBeUsedForRoundAfterRound(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	const path = "/b/double/rounds"
	ds := []*barrier.DoubleBarrier{
		newDouble(t, newClient(t, cl.Addrs()), path, 2),
		newDouble(t, newClient(t, cl.Addrs()), path, 2),
	}
	for range 3 {
		var got []<-chan error
		for _, d := range ds {
			got = append(got, async(func() error { return d.Enter(ctxT(t, 30*time.Second)) }))
		}
		for _, g := range got {
			require.NoError(t, returned(t, g, 30*time.Second, "Enter"))
		}
		got = nil
		for _, d := range ds {
			got = append(got, async(func() error { return d.Leave(ctxT(t, 30*time.Second)) }))
		}
		for _, g := range got {
			require.NoError(t, returned(t, g, 30*time.Second, "Leave"))
		}
		waitNodes(t, obs, path, 0)
	}
}

func TestSingleMemberBarrierEntersAndLeavesAlone(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	d := newDouble(t, newClient(t, cl.Addrs()), "/b/double/one", 1)
	require.NoError(t, d.Enter(ctxT(t, 10*time.Second)))
	assert.ErrorIs(t, d.Enter(ctxT(t, 10*time.Second)), barrier.ErrAlreadyEntered)
	require.NoError(t, d.Leave(ctxT(t, 10*time.Second)))
	waitNodes(t, obs, "/b/double/one", 0)
}

// enterAll makes n members of the double barrier at path, each on its own
// client, and enters them all.
func enterAll(t *testing.T, cl *zktest.Cluster, path string, n int) []*barrier.DoubleBarrier {
	t.Helper()
	var ds []*barrier.DoubleBarrier
	var got []<-chan error
	for range n {
		d := newDouble(t, newClient(t, cl.Addrs()), path, n)
		ds = append(ds, d)
		got = append(got, async(func() error { return d.Enter(ctxT(t, 30*time.Second)) }))
	}
	for _, g := range got {
		require.NoError(t, returned(t, g, 30*time.Second, "Enter"))
	}
	return ds
}
