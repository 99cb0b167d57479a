package partition_test

import (
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(thawEnv); spec != "" {
		runThawHelper(spec)
		return
	}
	os.Exit(zktest.Main(m))
}

var (
	newClient = testkit.Client
	ctxT      = testkit.Ctx
)

func itemNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("item-%02d", i)
	}
	return out
}

// ledger follows every member's events and checks, at each Acquired, that
// no other hold of the item is still live: every earlier owner's hold
// (lower token) has ended already, and no later one exists. It looks at the
// holds themselves, not at their events, so a slow reader cannot hide an
// overlap.
type ledger struct {
	t        testing.TB
	mu       sync.Mutex
	holds    map[string][]owned
	problems []string
	wg       sync.WaitGroup
}

type owned struct {
	member string
	h      *hold.Hold
}

func newLedger(t testing.TB) *ledger {
	l := &ledger{t: t, holds: map[string][]owned{}}
	t.Cleanup(func() {
		l.wg.Wait()
		assert.Empty(t, l.Problems(), "items owned twice at once")
	})
	return l
}

func (l *ledger) follow(p *partition.Partitioner) {
	sub := p.Subscribe()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for ev := range sub.Changes() {
			if ev.Kind == partition.Acquired {
				l.acquired(p.ID(), ev.Item, ev.Hold)
			}
		}
	}()
}

func (l *ledger) acquired(member, item string, h *hold.Hold) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.holds[item] {
		select {
		case <-o.h.Done():
			continue
		default:
		}
		l.problems = append(l.problems, fmt.Sprintf("%s: %s acquired it with token %d while %s's token %d was live",
			item, member, h.Token(), o.member, o.h.Token()))
	}
	l.holds[item] = append(l.holds[item], owned{member, h})
}

func (l *ledger) Problems() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.problems...)
}

// Grants is how many times item was acquired, by anyone.
func (l *ledger) Grants() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, hs := range l.holds {
		n += len(hs)
	}
	return n
}

// waitHeard waits until the ledger's last grant of every item is to its
// owner in owners: the events of the way to a stable state have all
// reached it, so a count of grants taken now is whole.
func waitHeard(t testing.TB, l *ledger, owners map[string]string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		l.mu.Lock()
		defer l.mu.Unlock()
		for item, owner := range owners {
			hs := l.holds[item]
			if assert.NotEmpty(ct, hs, item) {
				assert.Equal(ct, owner, hs[len(hs)-1].member, item)
			}
		}
	}, 30*time.Second, 10*time.Millisecond)
}

// waitGrants waits until the ledger has heard of want grants in all: a
// member's Items changes before its Acquired event reaches the ledger's
// subscriber, so waitStable can return with grants still on their way.
// One grant too many never becomes want and fails here, or in the next
// phase's count.
func waitGrants(t testing.TB, l *ledger, want int) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, want, l.Grants(), "grants heard of")
	}, 30*time.Second, 10*time.Millisecond)
}

// start makes and starts a member, closed at the test's end.
func start(t testing.TB, c *framework.Client, path, id string, items partition.Items, l *ledger, opts ...partition.Option) *partition.Partitioner {
	t.Helper()
	p, err := partition.New(c, path, id, items, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	if l != nil {
		l.follow(p)
	}
	require.NoError(t, p.Start(ctxT(t, 30*time.Second)))
	return p
}

// waitStable waits until the members own every item once, evenly (counts
// at most one apart), in a state Assign keeps as it is (the members' next
// answer, given these owners, is these owners), and returns the owner of
// each item.
func waitStable(t testing.TB, items []string, members ...*partition.Partitioner) map[string]string {
	t.Helper()
	ids := make([]string, len(members))
	for i, p := range members {
		ids[i] = p.ID()
	}
	var got map[string]string
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got = map[string]string{}
		for _, p := range members {
			seen, err := p.Members()
			if !assert.NoError(ct, err) || !assert.ElementsMatch(ct, ids, seen) {
				return
			}
			for _, it := range p.Items() {
				if prev, ok := got[it]; ok {
					ct.Errorf("%s owned by %s and %s", it, prev, p.ID())
				}
				got[it] = p.ID()
			}
		}
		if !assert.Len(ct, got, len(items)) {
			return
		}
		c := counts(got)
		if len(items) >= len(ids) {
			assert.Len(ct, c, len(ids))
		}
		assert.LessOrEqual(ct, c[len(c)-1]-c[0], 1, "uneven: %v", c)
		assert.Equal(ct, partition.Assign(items, ids, got), got)
	}, 60*time.Second, 20*time.Millisecond)
	return got
}

// counts is how many items each member owns, sorted.
func counts(owners map[string]string) []int {
	byMember := map[string]int{}
	for _, m := range owners {
		byMember[m]++
	}
	out := make([]int, 0, len(byMember))
	for _, n := range byMember {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

func moved(before, after map[string]string) int {
	n := 0
	for it, m := range after {
		if before[it] != m {
			n++
		}
	}
	return n
}
