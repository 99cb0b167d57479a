package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes"
)

func TestSortKeyIsTheTextAfterTheLastMarker(t *testing.T) {
	assert.Equal(t, "0000000007", SortKey("_c_1b4e28ba-2fa1-11d2-883f-0016d3cca427-lock-0000000007", "lock-"))
	assert.Equal(t, "0000000003", SortKey("_c_x-__READ__0000000003", "__READ__", "__WRIT__"))
	assert.Equal(t, "0000000004", SortKey("_c_x-__WRIT__0000000004", "__READ__", "__WRIT__"))
	assert.Equal(t, "stray", SortKey("stray", "lock-"), "no marker: the whole name, as Curator")
}

func TestAheadAgreesWithAFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n < 60; n++ {
		var kids []string
		for i := 0; i < n; i++ {
			kids = append(kids, fmt.Sprintf("_c_%08x-lock-%010d", r.Uint32(), i))
		}
		r.Shuffle(len(kids), func(i, j int) { kids[i], kids[j] = kids[j], kids[i] })
		full := Sort(kids, "lock-")
		for i, ours := range full {
			ahead, ok := Ahead(kids, ours, "lock-")
			assert.True(t, ok)
			assert.Equal(t, full[:i+1], ahead)
		}
	}
	_, ok := Ahead([]string{"a-lock-1"}, "b-lock-2", "lock-")
	assert.False(t, ok)
}

func TestFirstWaitsOnTheNodeMaxHoldersAhead(t *testing.T) {
	q := []string{"lock-0", "lock-1", "lock-2", "lock-3"}
	assert.Equal(t, Decision{Holds: true}, First(1).Decide(q[:1], 0))
	assert.Equal(t, Decision{Watch: 0, OnlyObstacle: true}, First(1).Decide(q[:2], 1))
	assert.Equal(t, Decision{Watch: 2}, First(1).Decide(q, 3))
	assert.Equal(t, Decision{Holds: true}, First(2).Decide(q[:2], 1))
	assert.Equal(t, Decision{Watch: 1}, First(2).Decide(q, 3))
	assert.True(t, slices.IsSorted(q))
}

// The engine's hot paths, run with allocations reported so that a
// regression shows in review:
//
//	go test -run '^$' -bench Engine -benchmem ./engine/

func queueOf(n int) []string {
	var kids []string
	for i := range n {
		kids = append(kids, fmt.Sprintf("_c_%08x-0000-0000-0000-000000000000-lock-%010d", i*7919, i))
	}
	return kids
}

// BenchmarkEngineAhead: one look at the queue, as every contender takes on
// each listing, near the head of queues of several depths (a contender
// that just queued is at the tail: see the "tail" cases).
func BenchmarkEngineAhead(b *testing.B) {
	for _, n := range []int{8, 1000, 10000} {
		kids := queueOf(n)
		for _, at := range []struct {
			name string
			i    int
		}{{"head", min(3, n-1)}, {"tail", n - 1}} {
			b.Run(fmt.Sprintf("n=%d/%s", n, at.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					Ahead(kids, kids[at.i], "lock-")
				}
			})
		}
	}
}

func BenchmarkEngineSortKey(b *testing.B) {
	name := queueOf(1)[0]
	b.ReportAllocs()
	for b.Loop() {
		SortKey(name, "lock-")
	}
}

func BenchmarkEngineDecide(b *testing.B) {
	q := queueOf(8)
	d := First(1)
	b.ReportAllocs()
	for b.Loop() {
		d.Decide(q, len(q)-1)
	}
}

// Every error of the engine reaches callers with a sentinel the recipes
// document (zkrecipes.ErrSessionLost is zkrecipes.ErrSessionLost, and so on). Before,
// a TryAcquire whose node went with its session returned
// zkrecipes.ErrSessionLost, which no recipe documents.
func TestErrGivesEveryErrorTheRecipesSentinels(t *testing.T) {
	for name, tc := range map[string]struct {
		err    error
		closed bool
		want   []error
	}{
		"would block":   {fmt.Errorf("x: %w", zkrecipes.ErrWouldBlock), false, []error{zkrecipes.ErrWouldBlock}},
		"session lost":  {fmt.Errorf("%w: node gone", zkrecipes.ErrSessionLost), false, []error{zkrecipes.ErrSessionLost, zkrecipes.ErrSessionLost}},
		"client closed": {fmt.Errorf("op: %w", zkrecipes.ErrClosed), false, []error{zkrecipes.ErrClosed, zkrecipes.ErrClosed}},
		"closing":       {zk.ErrClosing, false, []error{zkrecipes.ErrClosed}},
		"lock closed":   {context.Canceled, true, []error{zkrecipes.ErrClosed, context.Canceled}},
		"deadline":      {context.DeadlineExceeded, false, []error{context.DeadlineExceeded}},
		"no auth":       {fmt.Errorf("create: %w", zk.ErrNoAuth), false, []error{zk.ErrNoAuth}},
	} {
		t.Run(name, func(t *testing.T) {
			got := Err(tc.err, tc.closed)
			for _, w := range tc.want {
				assert.True(t, errors.Is(got, w), "%v is not %v", got, w)
			}
		})
	}
}

// Ahead's quick comparison of ten-digit keys keeps Sort's order exactly,
// whatever mix of names a queue holds (Curator's, ours, foreign ones,
// negative sequence numbers after the counter wrapped).
func TestAheadKeepsSortsOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	forms := []func() string{
		func() string { return fmt.Sprintf("_c_%08x-lock-%010d", r.Uint32(), r.IntN(50)) },
		func() string { return fmt.Sprintf("lock-%010d", r.IntN(50)) },
		func() string { return fmt.Sprintf("x-lock-%d", r.IntN(50)) },
		func() string { return fmt.Sprintf("lock-%011d", r.IntN(50)) },
		func() string { return fmt.Sprintf("lock--%09d", r.IntN(50)) },
		func() string { return fmt.Sprintf("other%d", r.IntN(50)) },
	}
	for range 2000 {
		seen := map[string]bool{}
		var kids []string
		for range 1 + r.IntN(12) {
			n := forms[r.IntN(len(forms))]()
			if !seen[n] {
				seen[n] = true
				kids = append(kids, n)
			}
		}
		sorted := Sort(kids, "lock-")
		ours := kids[r.IntN(len(kids))]
		ahead, ok := Ahead(kids, ours, "lock-")
		require.True(t, ok)
		require.Equal(t, sorted[:slices.Index(sorted, ours)+1], ahead, "kids %q", kids)
	}
}

// First's one-pass look decides as Ahead and Decide do over the sorted
// queue, for any number of holders.
func TestFirstLookDecidesAsTheSortedQueue(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		n := 1 + r.IntN(30)
		seen := map[string]bool{}
		var kids []string
		for len(kids) < n {
			name := fmt.Sprintf("_c_%04x-lock-%010d", r.IntN(1<<16), r.IntN(60))
			if r.IntN(8) == 0 {
				name = fmt.Sprintf("odd-%d", r.IntN(60))
			}
			if !seen[name] {
				seen[name] = true
				kids = append(kids, name)
			}
		}
		ours := kids[r.IntN(len(kids))]
		f := first(1 + r.IntN(3))
		sorted, ok := Ahead(kids, ours, "lock-")
		require.True(t, ok)
		want := f.Decide(sorted, len(sorted)-1)
		d, watch, ok := f.look(kids, ours, []string{"lock-"})
		require.True(t, ok)
		require.Equal(t, want, d, "kids %q ours %s", kids, ours)
		if !d.Holds {
			require.Equal(t, sorted[want.Watch], watch, "kids %q ours %s", kids, ours)
		}
	}
	_, _, ok := first(1).look([]string{"a-lock-1"}, "b-lock-2", []string{"lock-"})
	assert.False(t, ok)
}

func BenchmarkEngineFirstLook(b *testing.B) {
	for _, n := range []int{8, 1000, 10000} {
		kids := queueOf(n)
		b.Run(fmt.Sprintf("n=%d/tail", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				first(1).look(kids, kids[n-1], []string{"lock-"})
			}
		})
	}
}
