package shared_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

var (
	newClient = testkit.Client
	ctxT      = testkit.Ctx
)

func newCount(t testing.TB, c *framework.Client, path string, seed int32) *shared.Count {
	t.Helper()
	n, err := shared.NewCount(c, path, seed)
	require.NoError(t, err)
	t.Cleanup(func() { n.Close() })
	require.NoError(t, n.Start(ctxT(t, 30*time.Second)))
	return n
}

func newValue(t testing.TB, c *framework.Client, path string, seed []byte) *shared.Value {
	t.Helper()
	v, err := shared.NewValue(c, path, seed)
	require.NoError(t, err)
	t.Cleanup(func() { v.Close() })
	require.NoError(t, v.Start(ctxT(t, 30*time.Second)))
	return v
}

// waitCount waits until n holds want and says it is fresh.
func waitCount(t testing.TB, n *shared.Count, want int32) shared.Versioned[int32] {
	t.Helper()
	var got shared.Versioned[int32]
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		var err error
		got, err = n.Get()
		assert.NoError(ct, err)
		assert.Equal(ct, want, got.Value)
		assert.NoError(ct, n.Err())
	}, 30*time.Second, 10*time.Millisecond)
	return got
}

func raw(t testing.TB, c *framework.Client, path string) ([]byte, *zk.Stat) {
	t.Helper()
	data, st, err := c.Get(ctxT(t, 10*time.Second), path)
	require.NoError(t, err)
	return data, st
}

func TestStartMakesNodeWithSeedInCuratorFormat(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	n := newCount(t, c, "/shared/format/count", 258)

	data, st := raw(t, c, "/shared/format/count")
	assert.Equal(t, []byte{0, 0, 1, 2}, data, "4-byte big-endian int, as Curator's SharedCount")
	got, err := n.Get()
	require.NoError(t, err)
	assert.Equal(t, shared.Versioned[int32]{Value: 258, Version: st.Version, Zxid: st.Mzxid}, got)
	assert.NoError(t, n.Err())

	_, err = n.Set(ctxT(t, 10*time.Second), -1)
	require.NoError(t, err)
	data, _ = raw(t, c, "/shared/format/count")
	assert.Equal(t, []byte{0xff, 0xff, 0xff, 0xff}, data)

	v := newValue(t, c, "/shared/format/value", []byte("seed"))
	data, _ = raw(t, c, "/shared/format/value")
	assert.Equal(t, []byte("seed"), data, "a SharedValue's data is the value itself")
	got2, err := v.Get()
	require.NoError(t, err)
	assert.Equal(t, []byte("seed"), got2.Value)
}

func TestStartKeepsTheValueOfAnExistingNode(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	first := newCount(t, c, "/shared/existing", 1)
	_, err := first.Set(ctxT(t, 10*time.Second), 7)
	require.NoError(t, err)

	second := newCount(t, newClient(t, cl.Addrs()), "/shared/existing", 100)
	got, err := second.Get()
	require.NoError(t, err)
	assert.Equal(t, int32(7), got.Value, "the seed is for a missing node only")
	assert.Equal(t, int32(1), got.Version)
}

func TestSetIsSeenByEveryFollower(t *testing.T) {
	cl := zktest.Standalone(t)
	a := newValue(t, newClient(t, cl.Addrs()), "/shared/seen", nil)
	b := newValue(t, newClient(t, cl.Addrs()), "/shared/seen", nil)
	sub := b.Subscribe()
	defer sub.Close()
	first := <-sub.Changes()
	assert.Equal(t, []byte{}, first.Value, "the subscription begins with the value held")

	set, err := a.Set(ctxT(t, 10*time.Second), []byte("hello"))
	require.NoError(t, err)
	select {
	case got := <-sub.Changes():
		assert.Equal(t, set, got)
	case <-time.After(10 * time.Second):
		t.Fatal("the change did not arrive")
	}
	got, err := b.Get()
	require.NoError(t, err)
	assert.Equal(t, set, got)
}

func TestTrySetOnCurrentVersionWrites(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	n := newCount(t, c, "/shared/try", 5)
	cur, err := n.Get()
	require.NoError(t, err)

	next, ok, err := n.TrySet(ctxT(t, 10*time.Second), cur, 6)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int32(6), next.Value)
	assert.Equal(t, cur.Version+1, next.Version)
	assert.Greater(t, next.Zxid, cur.Zxid)
	data, st := raw(t, c, "/shared/try")
	assert.Equal(t, shared.EncodeCount(6), data)
	assert.Equal(t, st.Version, next.Version)
}

// Someone else's change between the read and the TrySet: it writes
// nothing, and returns the value as it now is, so the caller can retry.
func TestTrySetAfterAnotherChangeFailsAndReturnsTheNewValue(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	n := newCount(t, c, "/shared/stale", 5)
	other := newCount(t, newClient(t, cl.Addrs()), "/shared/stale", 0)
	cur, err := n.Get()
	require.NoError(t, err)
	_, err = other.Set(ctxT(t, 10*time.Second), 50)
	require.NoError(t, err)

	// Straight after the other's write, before n's watch may have fired:
	// the server refuses the version.
	fresh, ok, err := n.TrySet(ctxT(t, 10*time.Second), cur, 6)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, int32(50), fresh.Value, "read again from the node")
	data, _ := raw(t, c, "/shared/stale")
	assert.Equal(t, shared.EncodeCount(50), data, "nothing written")

	// With the fresh value it goes through.
	_, ok, err = n.TrySet(ctxT(t, 10*time.Second), fresh, 51)
	require.NoError(t, err)
	assert.True(t, ok)
	// And the stale value fails again, now without asking the server.
	_, ok, err = n.TrySet(ctxT(t, 10*time.Second), cur, 7)
	require.NoError(t, err)
	assert.False(t, ok)
	waitCount(t, other, 51)
}

// Compare-and-set increments from many clients at once: none is lost, none
// counts twice, and every success has a version of its own.
func TestConcurrentTrySetIncrementsLoseNothing(t *testing.T) {
	cl := zktest.Standalone(t)
	const clients, each = 4, 25
	counts := make([]*shared.Count, clients)
	for i := range counts {
		counts[i] = newCount(t, newClient(t, cl.Addrs()), "/shared/incr", 1000)
	}
	var mu sync.Mutex
	versions := map[int32]bool{}
	var wg sync.WaitGroup
	for _, n := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cur, err := n.Get()
			if !assert.NoError(t, err) {
				return
			}
			for done := 0; done < each; {
				next, ok, err := n.TrySet(ctxT(t, 10*time.Second), cur, cur.Value+1)
				if !assert.NoError(t, err) {
					return
				}
				if ok {
					done++
					mu.Lock()
					assert.False(t, versions[next.Version], "two successes made version %d", next.Version)
					versions[next.Version] = true
					mu.Unlock()
				}
				cur = next
			}
		}()
	}
	wg.Wait()
	for _, n := range counts {
		got := waitCount(t, n, 1000+clients*each)
		assert.Equal(t, int32(clients*each), got.Version)
	}
	assert.Len(t, versions, clients*each)
}

// A burst of changes from another client arrives in order: each value
// newer than the one before, ending with the last.
func TestSubscriptionNeverGoesBackwards(t *testing.T) {
	cl := zktest.Standalone(t)
	follower := newCount(t, newClient(t, cl.Addrs()), "/shared/order", 0)
	writer := newCount(t, newClient(t, cl.Addrs()), "/shared/order", 0)
	sub := follower.Subscribe()
	defer sub.Close()
	const last = 200
	wrote := make(chan struct{})
	defer func() { <-wrote }() // the writer's goroutine ends with the test
	go func() {
		defer close(wrote)
		for i := int32(1); i <= last; i++ {
			if _, err := writer.Set(context.Background(), i); err != nil {
				return
			}
		}
	}()
	prev := <-sub.Changes()
	seen := 1
	for prev.Value != last {
		select {
		case got := <-sub.Changes():
			require.Greater(t, got.Zxid, prev.Zxid, "went backwards")
			require.Greater(t, got.Version, prev.Version)
			require.Greater(t, got.Value, prev.Value)
			assert.Equal(t, got.Value, got.Version, "value and version from one read")
			prev = got
			seen++
		case <-time.After(20 * time.Second):
			t.Fatalf("stuck at %v", prev)
		}
	}
	t.Logf("%d of %d values seen (the rest coalesced by the one-shot watch)", seen, last+1)
}

func TestCountWithDataThatIsNotACountIsATypedError(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	_, err := c.Create(ctxT(t, 10*time.Second), "/shared/bad", []byte{1, 2, 3}, framework.WithParents())
	require.NoError(t, err)
	n := newCount(t, c, "/shared/bad", 0)
	got, err := n.Get()
	assert.ErrorIs(t, err, zkrecipes.ErrBadData)
	assert.Equal(t, int32(0), got.Version, "the version is still there, to replace the data")

	fixed, ok, err := n.TrySet(ctxT(t, 10*time.Second), got, 9)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, int32(9), fixed.Value)

	_, err = c.Set(ctxT(t, 10*time.Second), "/shared/bad", []byte{0, 0, 0, 0, 1}, -1)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, err := n.Get()
		assert.ErrorIs(ct, err, zkrecipes.ErrBadData, "5 bytes is not a count either")
	}, 10*time.Second, 10*time.Millisecond)

	_, err = shared.DecodeCount(nil)
	assert.ErrorIs(t, err, zkrecipes.ErrBadData)
}

// Curator's SharedValue stops watching a deleted node and does not make it
// again. Here the follower keeps following: it reports the deletion (Err),
// writes fail with zkrecipes.ErrNodeDeleted, and once someone makes the node again the
// new value arrives, newer by zxid though its version starts again.
func TestDeletedNodeIsReportedAndFollowedWhenMadeAgain(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	n := newCount(t, newClient(t, cl.Addrs()), "/shared/deleted", 3)
	_, err := n.Set(ctxT(t, 10*time.Second), 4)
	require.NoError(t, err)
	before, err := n.Get()
	require.NoError(t, err)

	require.NoError(t, obs.Delete(ctxT(t, 10*time.Second), "/shared/deleted", -1))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.ErrorIs(ct, n.Err(), zkrecipes.ErrNodeDeleted)
	}, 10*time.Second, 10*time.Millisecond)
	assert.ErrorIs(t, n.Err(), zkrecipes.ErrStale)
	_, err = n.Set(ctxT(t, 10*time.Second), 5)
	assert.ErrorIs(t, err, zkrecipes.ErrNodeDeleted)
	assert.ErrorIs(t, err, zk.ErrNoNode)
	_, _, err = n.TrySet(ctxT(t, 10*time.Second), before, 5)
	assert.ErrorIs(t, err, zkrecipes.ErrNodeDeleted)
	ok, _, err := obs.Exists(ctxT(t, 10*time.Second), "/shared/deleted")
	require.NoError(t, err)
	assert.False(t, ok, "not made again behind the deleter's back")

	// With its parent: the container the Count made for it may have been
	// reaped, empty, meanwhile.
	_, err = obs.Create(ctxT(t, 10*time.Second), "/shared/deleted", shared.EncodeCount(42), framework.WithParents())
	require.NoError(t, err)
	got := waitCount(t, n, 42)
	assert.Equal(t, int32(0), got.Version, "a new node's version starts again")
	assert.Greater(t, got.Zxid, before.Zxid)
	_, ok, err = n.TrySet(ctxT(t, 10*time.Second), got, 43)
	require.NoError(t, err)
	assert.True(t, ok)
}

// Subscribe promises "the values read or written from now on, beginning
// with the one held (once Start has read it)": so does a subscription made
// while Start is finishing, after the follower's first read was delivered
// to the subscriptions there were and before Start marks the value
// started (the node does not change, so nothing else would come).
func TestASubscriptionMadeDuringStartGetsTheValueHeld(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	for i := range 20 {
		n, err := shared.NewCount(c, "/shared/sub-during-start", 7)
		require.NoError(t, err)
		var subs []*framework.Subscription[shared.Versioned[int32]]
		done := make(chan error, 1)
		go func() { done <- n.Start(ctxT(t, 30*time.Second)) }()
	spin:
		for {
			select {
			case err := <-done:
				require.NoError(t, err)
				break spin
			default:
				subs = append(subs, n.Subscribe())
			}
		}
		missed := 0
		deadline := ctxT(t, 10*time.Second)
		for _, s := range subs {
			select {
			case v := <-s.Changes():
				assert.Equal(t, int32(7), v.Value)
			case <-deadline.Done():
				missed++
			}
			s.Close()
		}
		n.Close()
		require.Zero(t, missed, "round %d: %d of %d subscriptions made during Start never got the value held", i, missed, len(subs))
	}
}
