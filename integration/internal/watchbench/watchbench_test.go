package watchbench

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// fullShape is the tree: 20 × 20 × 50 = 20,421 nodes with the root.
const fullShape = "20x20x50"

var (
	out          = flag.String("watch.out", "", "markdown file whose bench-watch section is rewritten (empty: print only)")
	shapeFlag    = flag.String("watch.shape", envOr("ZKR_WATCH_SHAPE", fullShape), "the tree's fan-out per level (env ZKR_WATCH_SHAPE)")
	instances    = flag.Int("watch.instances", 1000, "the service's instances")
	items        = flag.Int("watch.items", 1000, "the partitioner's items")
	members      = flag.Int("watch.members", 5, "the partitioner's members")
	events       = flag.Int("watch.events", 200, "writes timed per cache")
	dataSize     = flag.Int("watch.data", 100, "bytes of data per tree node")
	spreadWithin = flag.Duration("watch.spread", 5*time.Minute, "how long the partitioner may take to spread its items evenly")
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

// BenchmarkWatch runs every workload once, each peer on a session of its
// own against one server, and prints (and with -watch.out writes) the table.
func BenchmarkWatch(b *testing.B) {
	sh, err := parseShape(*shapeFlag)
	require.NoError(b, err)
	// The server as deployed: the production JIT, and ZooKeeper's own
	// interval for deleting empty containers (60 s; the tests' 1 s one
	// reaps the partitioner's item directories under its members).
	cl := zktest.Standalone(b, zktest.WithFullJIT(), zktest.WithContainerCheck(time.Minute))
	started := time.Now()

	const tree = "/watchbench/tree"
	all, leaves := sh.paths(tree)
	data := payload(*dataSize)
	createAll(b, cl, all, func(int) []byte { return data })
	targets := picks(leaves, *events, 7)
	treeRows := []row{
		show(goTree(b, cl, tree, len(all), targets)),
		show(javaCache(b, cl, "Curator CuratorCache", "curatorcache", tree, len(all), leaves, *events)),
		show(javaCache(b, cl, "Curator TreeCache", "treecache", tree, len(all), leaves, *events)),
	}

	const service = "/watchbench/services/bench"
	var insts []string
	for i := range *instances {
		insts = append(insts, fmt.Sprintf("%s/i%04d", service, i))
	}
	createAll(b, cl, append([]string{service}, insts...), func(i int) []byte {
		if i == 0 {
			return nil
		}
		return instanceData("bench", i-1)
	})
	svcTargets := picks(insts, *events, 7)
	svcRows := []row{
		show(goService(b, cl, service, len(insts), svcTargets)),
		show(javaCache(b, cl, "Curator ServiceCache", "servicecache", service, len(insts), insts, *events)),
	}
	partRows := []row{show(goPartition(b, cl, "/watchbench/partition", *items, *members))}

	md := table(sh, len(all), treeRows, svcRows, partRows, time.Since(started))
	fmt.Print("\n" + md) // the whole table: a benchmark's log is cut at ten lines
	if *out != "" {
		require.NoError(b, rewriteSection(*out, md))
	}
}

// show prints r as soon as it is measured, so that a run that fails later
// still shows it.
func show(r row) row {
	fmt.Println(r)
	return r
}

// table renders the section of docs/benchmarks.md.
func table(sh shape, nodes int, tree, svc, part []row, took time.Duration) string {
	var md strings.Builder
	fmt.Fprintf(&md, "Measured by `make bench-watch` on %s (%d CPUs, %s/%s, %s), one ZooKeeper 3.8 server, one run, in %s; "+
		"the machine was shared with other work, so times are indicative, counts and bytes are not.\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), took.Round(time.Second))
	fmt.Fprintf(&md, "**A tree of %s = %s nodes of %d bytes**, cached whole:\n\n", sh, commas(nodes), *dataSize)
	rows(&md, "node", tree)
	fmt.Fprintf(&md, "\n**A service of %s instances**:\n\n", commas(*instances))
	rows(&md, "instance", svc)
	fmt.Fprintf(&md, "\n**A partitioner of %s items over %d members** (all in one process; ready is the time to the even spread, from the first Start):\n\n", commas(*items), *members)
	rows(&md, "item", part)
	md.WriteString("\nGoroutines (threads for Curator) and heap are what the peer added, counted before it was built and once it was ready; " +
		"Go: `runtime.NumGoroutine` and `runtime.MemStats` HeapInuse and StackInuse after two GCs; " +
		"Curator: the JVM's live thread count and used heap after `System.gc()` (serial collector, C2, 1 GB heap). " +
		"Events: a write of a node picked at random (seeded) by the peer's own session, to the peer's event for that node, " +
		fmt.Sprintf("%d writes one after another. Server watches: `zk_watch_count` of the `mntr` four-letter word (data and child watches, one-shot and persistent), before and after, each peer on a session of its own.\n", *events))
	return md.String()
}

func rows(md *strings.Builder, unit string, rs []row) {
	fmt.Fprintf(md, "| | goroutines or threads added (per %s) | heap per %s | goroutine stacks per %s | ready | event p50 / p99 | server watches |\n|---|---|---|---|---|---|---|\n", unit, unit, unit)
	for _, r := range rs {
		stack, lat := "—", "—"
		if r.stackPer >= 0 {
			stack = fmt.Sprintf("%.0f B", r.stackPer)
		}
		if r.p50 >= 0 {
			lat = fmt.Sprintf("%s / %s", us(r.p50), us(r.p99))
		}
		ready := r.ready.Round(time.Millisecond).String()
		if r.ready < 0 {
			ready = r.note
		}
		per := fmt.Sprintf("%.3f", r.perUnit)
		if r.perUnit > 0 && r.perUnit < 0.01 {
			per = fmt.Sprintf("%.5f", r.perUnit)
		}
		fmt.Fprintf(md, "| %s | %s (%s) | %.0f B | %s | %s | %s | %s |\n",
			r.peer, commas(r.threads), per, r.heapPerUnit, stack, ready, lat, commas(r.watches))
	}
}

// commas writes n with thousands separated: 20,421.
func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func us(d time.Duration) string {
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%d µs", d.Microseconds())
	}
	return d.Round(100 * time.Microsecond).String()
}

const begin, end = "<!-- bench-watch:begin -->", "<!-- bench-watch:end -->"

// rewriteSection replaces what lies between the markers in file (appending
// a section if they are missing).
func rewriteSection(file, body string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	section := begin + "\n" + body + end
	if i < 0 || j < i {
		s = strings.TrimRight(s, "\n") + "\n\n## The watching recipes at scale\n\n" + section + "\n"
	} else {
		s = s[:i] + section + s[j+len(end):]
	}
	return os.WriteFile(file, []byte(s), 0o644)
}
