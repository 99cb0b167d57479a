package watchbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// mem is what this process holds at one moment, after two collections.
type mem struct {
	heap, stack uint64
	goroutines  int
}

func memNow() mem {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return mem{heap: ms.HeapInuse, stack: ms.StackInuse, goroutines: runtime.NumGoroutine()}
}

// row is one peer's figures on one workload. Negative means not measured.
type row struct {
	peer        string
	units       int     // nodes, instances or items
	perUnit     float64 // goroutines (threads for Java) added per unit
	threads     int     // added, in all
	heapPerUnit float64 // bytes
	stackPer    float64 // goroutine-stack bytes per unit; -1 for Java
	ready       time.Duration
	p50, p99    time.Duration
	watches     int    // server watches added
	note        string // what went wrong, if anything
}

// String is the row on one line.
func (r row) String() string {
	return fmt.Sprintf("%s: units=%d added=%d (%.3f/unit) heap=%.0fB/unit stack=%.0fB/unit ready=%s p50=%s p99=%s watches=%d %s",
		r.peer, r.units, r.threads, r.perUnit, r.heapPerUnit, r.stackPer, r.ready, r.p50, r.p99, r.watches, r.note)
}

// goRow fills a row from two snapshots of this process.
func goRow(peer string, units int, before, after mem, ready time.Duration, watches int) row {
	n := float64(units)
	return row{peer: peer, units: units,
		perUnit: float64(after.goroutines-before.goroutines) / n, threads: after.goroutines - before.goroutines,
		heapPerUnit: (float64(after.heap) - float64(before.heap)) / n,
		stackPer:    (float64(after.stack) - float64(before.stack)) / n,
		ready:       ready, p50: -1, p99: -1, watches: watches}
}

var watchCount = regexp.MustCompile(`zk_watch_count\s+(\d+)`)

// watches is the server's count of watches, data and child, one-shot and
// persistent: mntr's zk_watch_count. (wchs's total counts the data watches
// only: a cache's child watches would be missing from it.)
func watches(t testing.TB, cl *zktest.Cluster) int {
	t.Helper()
	out, err := zktest.FourLetter(cl.DirectAddrs()[0], "mntr", 10*time.Second)
	require.NoError(t, err)
	m := watchCount.FindStringSubmatch(out)
	require.NotNil(t, m, "mntr answered %q", out)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

// dial is a fresh session, for one peer's measurement.
func dial(t testing.TB, cl *zktest.Cluster) *framework.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Dial(ctx, cl.DirectAddrs(), framework.WithSessionTimeout(30*time.Second))
	require.NoError(t, err)
	return c
}

// shape is a tree's fan-out per level below its root: 20x20x50 is 20
// children of the root, 20 under each, 50 under each of those.
type shape []int

func (sh shape) String() string {
	var parts []string
	for _, n := range sh {
		parts = append(parts, strconv.Itoa(n))
	}
	return strings.Join(parts, " × ")
}

func parseShape(s string) (shape, error) {
	var sh shape
	for _, f := range strings.Split(s, "x") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("shape %q: want N x N x ... (e.g. 20x20x50)", s)
		}
		sh = append(sh, n)
	}
	return sh, nil
}

// paths lists every node under root, parents first, and the leaves.
func (sh shape) paths(root string) (all, leaves []string) {
	level := []string{root}
	all = append(all, root)
	for d, n := range sh {
		var next []string
		for _, p := range level {
			for i := range n {
				next = append(next, fmt.Sprintf("%s/%c%02d", p, 'a'+d, i))
			}
		}
		all = append(all, next...)
		level = next
	}
	return all, level
}

// createAll makes the nodes, parents before children, with data, 200 to a
// multi on a raw session (the library is what is measured, not what builds).
func createAll(t testing.TB, cl *zktest.Cluster, paths []string, data func(i int) []byte) {
	t.Helper()
	z, events, err := zk.Connect(cl.DirectAddrs(), 30*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	require.NoError(t, err)
	defer z.Close()
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	_, err = z.Create(filepath.Dir(paths[0]), nil, 0, zk.WorldACL(zk.PermAll))
	if err != nil && err != zk.ErrNodeExists {
		require.NoError(t, err)
	}
	for start := 0; start < len(paths); start += 200 {
		var ops []any
		for i := start; i < min(start+200, len(paths)); i++ {
			ops = append(ops, &zk.CreateRequest{Path: paths[i], Data: data(i), Acl: zk.WorldACL(zk.PermAll)})
		}
		_, err := z.Multi(ops...)
		require.NoError(t, err)
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// payload is n bytes of printable data.
func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// picks are the nodes the event loop writes, the same for every peer.
func picks(candidates []string, n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, seed))
	out := make([]string, n)
	for i := range out {
		out[i] = candidates[r.IntN(len(candidates))]
	}
	return out
}

// pathsFile writes candidates for the Agent, one a line.
func pathsFile(t testing.TB, candidates []string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "paths")
	require.NoError(t, os.WriteFile(f, []byte(strings.Join(candidates, "\n")+"\n"), 0o600))
	return f
}

// percentiles are the p50 and p99 of d.
func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}
