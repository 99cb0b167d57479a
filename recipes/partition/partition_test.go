package partition_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

func TestStableMembersOwnEveryItemOnceAndEvenly(t *testing.T) {
	cl := zktest.Standalone(t)
	items := itemNames(31)
	l := newLedger(t)
	var ps []*partition.Partitioner
	for i := range 3 {
		ps = append(ps, start(t, newClient(t, cl.Addrs()), "/part/even", fmt.Sprintf("m%d", i), partition.List(items...), l))
	}
	owners := waitStable(t, items, ps...)
	assert.Len(t, owners, len(items))
	assert.Equal(t, []int{10, 10, 11}, counts(owners))

	// The item's lock says who holds it, in Curator's mutex layout.
	c := newClient(t, cl.Addrs())
	who, err := mutex.Participants(ctxT(t, 10*time.Second), c, partition.ItemPath("/part/even", items[0]))
	require.NoError(t, err)
	require.NotEmpty(t, who)
	assert.Equal(t, owners[items[0]], who[0])
}

// A join moves the newcomer's share and a leave the leaver's items, each
// within 1.5 times the ideal share (issue 30; TestAssignMovesAboutTheIdealShare
// checks Assign alone at more sizes).
func TestAJoinAndALeaveMoveAtMostOneAndAHalfTimesTheIdealShare(t *testing.T) {
	cl := zktest.Standalone(t)
	items := itemNames(60)
	l := newLedger(t)
	var ps []*partition.Partitioner
	for i := range 3 {
		ps = append(ps, start(t, newClient(t, cl.Addrs()), "/part/join", fmt.Sprintf("m%d", i), partition.List(items...), l))
	}
	before := waitStable(t, items, ps...)
	waitHeard(t, l, before)
	grants := l.Grants()
	ps = append(ps, start(t, newClient(t, cl.Addrs()), "/part/join", "m3", partition.List(items...), l))
	after := waitStable(t, items, ps...)
	ideal := float64(len(items)) / 4
	n := moved(before, after)
	t.Logf("a join moved %d items; the ideal share is %.0f", n, ideal)
	assert.LessOrEqual(t, float64(n), 1.5*ideal)
	assert.Equal(t, []int{15, 15, 15, 15}, counts(after))
	// Only the moved items were granted again: nothing else changed hands.
	waitGrants(t, l, grants+n)

	grants = l.Grants()
	require.NoError(t, ps[0].Close())
	left := waitStable(t, items, ps[1:]...)
	n = moved(after, left)
	t.Logf("a leave moved %d items; the ideal share is %.0f", n, ideal)
	assert.LessOrEqual(t, float64(n), 1.5*ideal)
	assert.Equal(t, []int{20, 20, 20}, counts(left))
	waitGrants(t, l, grants+n)
}

func TestALeaveMovesTheLeaversItemsToTheOthers(t *testing.T) {
	cl := zktest.Standalone(t)
	items := itemNames(40)
	l := newLedger(t)
	var ps []*partition.Partitioner
	for i := range 4 {
		ps = append(ps, start(t, newClient(t, cl.Addrs()), "/part/leave", fmt.Sprintf("m%d", i), partition.List(items...), l))
	}
	before := waitStable(t, items, ps...)
	leaver := ps[3]
	gone := leaver.Items()
	sub := leaver.Subscribe()
	var owned []string
	for range gone { // first, where it stands: an Acquired per item it owns
		ev := <-sub.Changes()
		require.Equal(t, partition.Acquired, ev.Kind)
		require.NoError(t, ev.Hold.Err())
		owned = append(owned, ev.Item)
	}
	assert.ElementsMatch(t, gone, owned)
	require.NoError(t, leaver.Close())
	require.NoError(t, leaver.Close(), "Close is idempotent")
	released := 0
	for ev := range sub.Changes() {
		require.Equal(t, partition.Released, ev.Kind)
		require.ErrorIs(t, ev.Err, zkrecipes.ErrClosed)
		require.Error(t, ev.Hold.Err(), "its hold had ended")
		released++
	}
	assert.Equal(t, len(gone), released)
	assert.Empty(t, leaver.Owned())
	after := waitStable(t, items, ps[:3]...)
	for _, it := range gone {
		assert.NotEqual(t, "m3", after[it])
	}
	n := moved(before, after)
	t.Logf("a leave moved %d items, of which %d were the leaver's", n, len(gone))
	assert.LessOrEqual(t, float64(n), 1.5*float64(len(gone)))
}

func TestAnExpiredSessionMovesTheMembersItemsToTheOthers(t *testing.T) {
	cl := zktest.Standalone(t)
	items := itemNames(30)
	l := newLedger(t)
	proxy := cl.NewProxy()
	victimClient := newClient(t, proxy.Addrs())
	victim := start(t, victimClient, "/part/expire", "victim", partition.List(items...), l)
	var others []*partition.Partitioner
	for i := range 2 {
		others = append(others, start(t, newClient(t, cl.Addrs()), "/part/expire", fmt.Sprintf("m%d", i), partition.List(items...), l))
	}
	before := waitStable(t, items, append(others, victim)...)
	var lost []*hold.Hold
	for _, h := range victim.Owned() {
		lost = append(lost, h)
	}
	require.NotEmpty(t, lost)

	// The process is as good as dead: no request of its goes through until
	// the server has expired its session.
	proxy.Blackhole()
	for _, h := range lost {
		select {
		case <-h.Done():
		case <-time.After(30 * time.Second):
			t.Fatal("a hold outlived its link")
		}
	}
	// The others take every item, the victim's included, while it is cut off.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got := map[string]bool{}
		for _, p := range others {
			for _, it := range p.Items() {
				got[it] = true
			}
		}
		assert.Len(ct, got, len(items))
	}, 60*time.Second, 20*time.Millisecond)
	proxy.Heal()
	// Back with a new session, it takes its share again: as a newcomer, from
	// the others, who now own every item (assignment is sticky).
	after := waitStable(t, items, append(others, victim)...)
	assert.Equal(t, counts(before), counts(after))
	assert.Len(t, victim.Items(), len(items)/3)
}

func TestChildrenOfANodeAreTheItemsFollowedLive(t *testing.T) {
	cl := zktest.Standalone(t)
	admin := newClient(t, cl.Addrs())
	ctx := ctxT(t, 30*time.Second)
	items := itemNames(6)
	for _, it := range items {
		_, err := admin.Create(ctx, "/part/jobs/"+it, nil, framework.WithParents())
		require.NoError(t, err)
	}
	l := newLedger(t)
	a := start(t, newClient(t, cl.Addrs()), "/part/children", "a", partition.ChildrenOf("/part/jobs"), l)
	b := start(t, newClient(t, cl.Addrs()), "/part/children", "b", partition.ChildrenOf("/part/jobs"), l)
	waitStable(t, items, a, b)

	_, err := admin.Create(ctx, "/part/jobs/new", nil)
	require.NoError(t, err)
	items = append(items, "new")
	waitStable(t, items, a, b)

	require.NoError(t, admin.Delete(ctx, "/part/jobs/"+items[0], -1))
	items = items[1:]
	waitStable(t, items, a, b)
}

// With a worker, the item's lock is given back only once the worker has
// returned: the new owner's worker starts after the old one's ended.
func TestAWorkerEndsBeforeTheNextOwnersStarts(t *testing.T) {
	cl := zktest.Standalone(t)
	items := itemNames(20)
	var mu sync.Mutex
	running := map[string]string{}
	var problems []string
	worker := func(id string) partition.Worker {
		return func(ctx context.Context, item string, h *hold.Hold) {
			mu.Lock()
			if other, ok := running[item]; ok {
				problems = append(problems, fmt.Sprintf("%s: %s started while %s ran", item, id, other))
			}
			running[item] = id
			mu.Unlock()
			<-ctx.Done()
			time.Sleep(10 * time.Millisecond) // a slow stop: the handoff waits for it
			mu.Lock()
			delete(running, item)
			mu.Unlock()
		}
	}
	l := newLedger(t)
	var ps []*partition.Partitioner
	for i := range 2 {
		id := fmt.Sprintf("m%d", i)
		ps = append(ps, start(t, newClient(t, cl.Addrs()), "/part/worker", id, partition.List(items...), l, partition.WithWorker(worker(id))))
	}
	waitStable(t, items, ps...)
	ps = append(ps, start(t, newClient(t, cl.Addrs()), "/part/worker", "m2", partition.List(items...), l, partition.WithWorker(worker("m2"))))
	waitStable(t, items, ps...)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		mu.Lock()
		defer mu.Unlock()
		assert.Len(ct, running, len(items))
	}, 30*time.Second, 10*time.Millisecond)
	for _, p := range ps {
		require.NoError(t, p.Close())
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, problems)
	assert.Empty(t, running, "Close waits for the workers")
}
