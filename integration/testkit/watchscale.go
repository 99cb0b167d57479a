package testkit

import (
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
)

// MaxGoroutinesPerWatchedNode is the watching recipes' bound on goroutines
// per node they watch: a cache, a service cache, a group's view and a
// partitioner cost O(1) goroutines whatever they watch, so 990 nodes more
// may add fewer than ten.
const MaxGoroutinesPerWatchedNode = 0.01

// WatchScales are the sizes GoroutinesPerWatchedNode compares.
var WatchScales = [2]int{10, 1000}

// CreateChildren makes parent (and its parents) and a persistent child per
// name with data(name), 200 creates to a multi: what a watching recipe's
// scale test watches, made quickly.
func CreateChildren(t testing.TB, c *framework.Client, parent string, names []string, data func(name string) []byte) {
	t.Helper()
	_, err := c.Create(Ctx(t, 30*time.Second), parent, nil, framework.WithParents())
	require.NoError(t, err)
	for start := 0; start < len(names); start += 200 {
		var ops []any
		for _, n := range names[start:min(start+200, len(names))] {
			ops = append(ops, &zk.CreateRequest{Path: path.Join(parent, n), Data: data(n), Acl: zk.WorldACL(zk.PermAll)})
		}
		_, err := c.Multi(Ctx(t, time.Minute), ops...)
		require.NoError(t, err)
	}
}

// GoroutinesAdded is how many goroutines run() added to the process,
// counted before it and once it returned (run starts the recipe and waits
// until it is ready; the recipe stays running), leaving out the clients'
// idle workers (BusyGoroutines): those of a burst of reads end by
// themselves half a second later, and are the client's, not the recipe's.
func GoroutinesAdded(run func()) int {
	before := BusyGoroutines()
	run()
	return BusyGoroutines() - before
}

// GoroutinesPerWatchedNode runs added at each of WatchScales (it makes a
// recipe watching that many nodes and returns the goroutines it added) and
// returns the goroutines per node the larger one added beyond the smaller,
// with a line saying so.
func GoroutinesPerWatchedNode(t testing.TB, recipe string, added func(n int) int) (float64, string) {
	t.Helper()
	small, large := WatchScales[0], WatchScales[1]
	a, b := added(small), added(large)
	per := float64(b-a) / float64(large-small)
	return per, fmt.Sprintf("%s: %d goroutines added watching %d nodes, %d watching %d: %.3f per node (bound %.2f)",
		recipe, a, small, b, large, per, MaxGoroutinesPerWatchedNode)
}
