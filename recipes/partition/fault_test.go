package partition_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

const faultItems = 24

// Under every fault no item is owned by two members at once (the ledger
// checks each grant against every other hold of the item), and once the
// fault heals every item is owned again, evenly. The members watch their
// view across the faults' reconnects: make test runs this without -race.
func TestNoItemIsOwnedTwiceAtOnceUnderFaultsWithoutRace(t *testing.T) {
	testkit.SkipUnderRace(t)
	faults := []struct {
		name  string
		apply func(t *testing.T, cl *zktest.Cluster, p *zktest.Proxy, victim *partition.Partitioner, others []*partition.Partitioner)
	}{
		{"cut link", func(t *testing.T, _ *zktest.Cluster, p *zktest.Proxy, victim *partition.Partitioner, others []*partition.Partitioner) {
			held := holds(victim)
			p.Cut()
			waitEnded(t, held)
			p.Heal()
		}},
		{"replies dropped", func(t *testing.T, _ *zktest.Cluster, p *zktest.Proxy, victim *partition.Partitioner, others []*partition.Partitioner) {
			held := holds(victim)
			p.DropReplies()
			waitEnded(t, held)
			p.Heal()
		}},
		{"requests dropped", func(t *testing.T, _ *zktest.Cluster, p *zktest.Proxy, victim *partition.Partitioner, others []*partition.Partitioner) {
			held := holds(victim)
			p.DropRequests()
			waitEnded(t, held)
			// The server hears nothing from the victim and expires its
			// session: the others take its items while it is still cut off.
			waitOwnAll(t, faultItems, others)
			p.Heal()
		}},
		{"session expired", func(t *testing.T, _ *zktest.Cluster, p *zktest.Proxy, victim *partition.Partitioner, others []*partition.Partitioner) {
			held := holds(victim)
			zktest.ExpireSession(t, p, held[0].SessionID())
			waitEnded(t, held)
		}},
		{"server restart", func(t *testing.T, cl *zktest.Cluster, _ *zktest.Proxy, victim *partition.Partitioner, _ []*partition.Partitioner) {
			held := holds(victim)
			cl.Servers()[0].Restart()
			waitEnded(t, held)
		}},
	}
	cl := zktest.Standalone(t, zktest.WithDurable())
	items := itemNames(faultItems)
	for i, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			path := fmt.Sprintf("/part/fault/%d", i)
			l := newLedger(t)
			proxy := cl.NewProxy()
			victim := start(t, newClient(t, proxy.Addrs()), path, "victim", partition.List(items...), l)
			ps := []*partition.Partitioner{victim}
			for j := range 2 {
				ps = append(ps, start(t, newClient(t, cl.Addrs()), path, fmt.Sprintf("m%d", j), partition.List(items...), l))
			}
			before := waitStable(t, items, ps...)
			waitHeard(t, l, before)
			grants := l.Grants()
			f.apply(t, cl, proxy, victim, ps[1:])
			after := waitStable(t, items, ps...)
			// The victim has its share again; which items depends on
			// whether the others took its items meanwhile (its session
			// ended) or left them for it (its member node stayed).
			require.Equal(t, counts(before), counts(after))
			require.Greater(t, l.Grants(), grants, "the fault moved no item")
			require.Empty(t, l.Problems())
		})
	}
}

// waitOwnAll waits until members own n items between them.
func waitOwnAll(t *testing.T, n int, members []*partition.Partitioner) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		total := 0
		for _, p := range members {
			total += len(p.Items())
		}
		assert.Equal(ct, n, total)
	}, 60*time.Second, 20*time.Millisecond)
}

func holds(p *partition.Partitioner) []*hold.Hold {
	var out []*hold.Hold
	for _, h := range p.Owned() {
		out = append(out, h)
	}
	return out
}

// waitEnded waits until every hold's loss signal has fired.
func waitEnded(t *testing.T, held []*hold.Hold) {
	t.Helper()
	require.NotEmpty(t, held)
	deadline := time.After(60 * time.Second)
	for _, h := range held {
		select {
		case <-h.Done():
		case <-deadline:
			t.Fatal("a hold outlived its fault")
		}
	}
}
