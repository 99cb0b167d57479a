package peers

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/curator"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

var (
	out    = flag.String("peers.out", "", "markdown file whose bench-peers section is rewritten (empty: print only)")
	rounds = flag.Int("peers.rounds", 5, "rounds of every workload")
	nets   = flag.String("peers.nets", "loopback,rtt1ms,pinned", "the networks to run, of loopback, rtt1ms and pinned")
)

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

// fields parses a bench line: key=value words.
func fields(line string) map[string]string {
	f := map[string]string{}
	for _, w := range strings.Fields(line) {
		if k, v, ok := strings.Cut(w, "="); ok {
			f[k] = v
		}
	}
	return f
}

func num(t testing.TB, f map[string]string, k string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(f[k], 64)
	require.NoError(t, err, "field %s in %v", k, f)
	return v
}

// workload is one row of the table: how each peer runs it, and the metric
// compared (higher is better unless lowerBetter).
type workload struct {
	name, metric string
	lowerBetter  bool
	zkr          []string // zkr-bench arguments
	agent        string   // the agent's command, "" if Curator has none; %s is the path
	loopbackOnly bool     // what a delay or a pinned server would not change
}

var workloads = []workload{
	{name: "uncontended: 1 session, acquire+release", metric: "p50_us", lowerBetter: true,
		zkr: []string{"--mode", "uncontended", "--n", "500"}, agent: "mutex-bench uncontended %s 500 0"},
	{name: "contended: 8 sessions on one lock, 5 s", metric: "per_s",
		zkr: []string{"--mode", "contended", "--clients", "8", "--duration", "5s"}, agent: "mutex-bench contended %s 8 5000"},
	{name: "keys: 1 session, 32 goroutines, a lock per key of 1000, 5 s", metric: "per_s",
		zkr: []string{"--mode", "keys", "--keys", "1000", "--workers", "32", "--duration", "5s"}, agent: "mutex-bench keys %s 1000 32"},
	{name: "queue: 1000 waiters over 10 sessions, drained", metric: "per_handoff_us", lowerBetter: true,
		zkr: []string{"--mode", "queue", "--waiters", "1000"}, agent: "mutex-bench queue %s 1000 0", loopbackOnly: true},
	{name: "latch: graceful leader handoff", metric: "p50_us", lowerBetter: true,
		zkr: []string{"--mode", "latch", "--rounds", "100"}, agent: "latch-bench %s 100"},
}

// network is where the peers meet the server: over loopback, through a
// proxy that delays each direction, or over loopback with the server's JVM
// on one core and every client on the other.
type network struct {
	name    string
	connect string
	rtt     time.Duration // measured: the median round trip of a bare exists
	pin     string        // taskset CPU list of the clients; "" for none
	agent   *curator.Process
}

// measureRTT is the median of 200 round trips of an exists on a go-zookeeper
// session over connect: what one request costs on that network, server
// included.
func measureRTT(t testing.TB, connect string) time.Duration {
	t.Helper()
	z, events, err := zk.Connect(strings.Split(connect, ","), 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	require.NoError(t, err)
	defer z.Close()
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	var rtts []time.Duration
	for range 200 {
		t0 := time.Now()
		_, _, err := z.Exists("/")
		require.NoError(t, err)
		rtts = append(rtts, time.Since(t0))
	}
	slices.Sort(rtts)
	return rtts[len(rtts)/2]
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// pin confines every thread of process pid to cpus.
func pin(t testing.TB, pid int, cpus string) {
	t.Helper()
	o, err := exec.Command("taskset", "-a", "-p", "-c", cpus, strconv.Itoa(pid)).CombinedOutput()
	require.NoError(t, err, "%s", o)
}

// cell is one workload on one network over the rounds: the speed-up
// against each peer, against the floor, and the client's cost beside
// zk.Lock's.
type cell struct {
	vsZK, vsCurator, floor []float64
	cpuRatio, allocRatio   []float64
	cpuUS, allocs          [2][]float64 // zkrecipes, zk.Lock
}

func BenchmarkPeers(b *testing.B) {
	root, err := filepath.Abs("../../..")
	require.NoError(b, err)
	zkr := filepath.Join(b.TempDir(), "zkr-bench")
	build := exec.Command("go", "build", "-o", zkr, "./cmd/zkr-bench")
	build.Dir = root
	o, err := build.CombinedOutput()
	require.NoError(b, err, "%s", o)

	// The server as deployed: the production JIT, and ZooKeeper's own
	// interval for deleting empty container nodes (60 s). The tests' 1 s
	// interval deleted the lock directories that zkrecipes and Curator make
	// as containers (zk.Lock makes them persistent) between one lock on a
	// key and the next: in keys mode a create in twenty then failed, made
	// its directory again and was sent again, an artifact no deployed
	// server produces.
	serverOpts := []zktest.Option{zktest.WithFullJIT(), zktest.WithContainerCheck(time.Minute)}
	agent := curator.Agent(b)
	var networks []*network
	var shared *zktest.Cluster
	sharedServer := func() *zktest.Cluster {
		if shared == nil {
			shared = zktest.Standalone(b, serverOpts...)
		}
		return shared
	}
	for _, name := range strings.Split(*nets, ",") {
		n := &network{name: name}
		switch name {
		case "loopback":
			n.connect = strings.Join(sharedServer().DirectAddrs(), ",")
		case "rtt1ms":
			// Half a millisecond each way: about 1 ms a round trip, a
			// server in the same data centre.
			p := sharedServer().NewProxy()
			p.Lag(500 * time.Microsecond)
			n.connect = p.ConnectString()
		case "pinned":
			// A server of its own, on CPU 0; the clients on CPU 1.
			cl := zktest.Standalone(b, append(slices.Clone(serverOpts), zktest.WithCPUs("0"))...)
			n.connect, n.pin = strings.Join(cl.DirectAddrs(), ","), "1"
		default:
			b.Fatalf("-peers.nets: unknown network %q", name)
		}
		n.agent = agent.Start(b, n.connect, 10*time.Second)
		if n.pin != "" {
			pin(b, n.agent.Pid(), n.pin)
		}
		networks = append(networks, n)
	}

	seq := 0
	path := func() string { seq++; return "/peers/p" + strconv.Itoa(seq) }
	run := func(w workload, peer string, n *network) map[string]string {
		b.Helper()
		if peer == "curator" {
			if w.agent == "" {
				return nil
			}
			cmd := fmt.Sprintf(w.agent, path())
			prefix := strings.Fields(cmd)[0]
			line := n.agent.Call(b, cmd, prefix, 10*time.Minute)
			f := fields(line)
			if prefix == "latch-bench" {
				f["peer"], f["mode"] = "curator", "latch"
			}
			return f
		}
		if peer == "zklock" && slices.Contains(w.zkr, "latch") {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		args := append([]string{"--connect", n.connect, "--peer", peer}, w.zkr...)
		name := zkr
		if n.pin != "" {
			name, args = "taskset", append([]string{"-c", n.pin, zkr}, args...)
		}
		c := exec.CommandContext(ctx, name, args...)
		c.Stderr = os.Stderr
		line, err := c.Output()
		require.NoError(b, err, "zkr-bench --peer %s %v", peer, w.zkr)
		return fields(string(line))
	}

	// What a parked waiter costs, and whether a deep queue slows handoffs:
	// ours alone (the peers' footprints are not comparable in-process), on
	// the first network, first: after twenty minutes of every peer's work
	// the shared server once fell behind a 10,000-deep queue on one
	// session long enough for the client to suspend the link.
	deep := func(n string) (map[string]string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		var stderr strings.Builder
		c := exec.CommandContext(ctx, zkr, "--connect", networks[0].connect, "--mode", "queue", "--waiters", n, "--sessions", "1")
		c.Stderr = &stderr
		line, err := c.Output()
		if err != nil {
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			return nil, fmt.Errorf("%v: %s", err, lines[len(lines)-1])
		}
		return fields(string(line)), nil
	}
	q8, err8 := deep("8")
	q10k, err10k := deep("10000")

	peers := []string{"zkrecipes", "zklock", "curator"}
	cells := make([][]cell, len(networks))
	var raw []string
	for ni, n := range networks {
		// Warm-up: the server's JIT, and the agent's.
		for _, peer := range peers {
			run(workloads[1], peer, n)
		}
		n.rtt = measureRTT(b, n.connect)
		b.Logf("network %s: %s, round trip p50 %v", n.name, n.connect, n.rtt)
		cells[ni] = make([]cell, len(workloads))
		for r := range *rounds {
			for i, w := range workloads {
				if w.loopbackOnly && n.name != "loopback" {
					continue
				}
				got := map[string]map[string]string{}
				for k := range peers {
					peer := peers[(k+r)%len(peers)]
					got[peer] = run(w, peer, n)
				}
				c := &cells[ni][i]
				ours := num(b, got["zkrecipes"], w.metric)
				speed := func(peer string) float64 {
					theirs := num(b, got[peer], w.metric)
					if w.lowerBetter {
						return theirs / ours
					}
					return ours / theirs
				}
				if got["zklock"] != nil {
					c.vsZK = append(c.vsZK, speed("zklock"))
					if _, ok := got["zkrecipes"]["cpu_ns_per_op"]; ok {
						oc, zc := num(b, got["zkrecipes"], "cpu_ns_per_op"), num(b, got["zklock"], "cpu_ns_per_op")
						oa, za := num(b, got["zkrecipes"], "allocs_per_op"), num(b, got["zklock"], "allocs_per_op")
						c.cpuRatio = append(c.cpuRatio, oc/zc)
						c.allocRatio = append(c.allocRatio, oa/za)
						c.cpuUS[0], c.cpuUS[1] = append(c.cpuUS[0], oc/1000), append(c.cpuUS[1], zc/1000)
						c.allocs[0], c.allocs[1] = append(c.allocs[0], oa), append(c.allocs[1], za)
					}
				}
				if got["curator"] != nil {
					c.vsCurator = append(c.vsCurator, speed("curator"))
				}
				if fl, ok := got["zkrecipes"]["floor_per_s"]; ok {
					f, _ := strconv.ParseFloat(fl, 64)
					c.floor = append(c.floor, ours/f)
				}
				line := fmt.Sprintf("%s round %d %s:", n.name, r+1, w.name)
				for _, p := range peers {
					if got[p] != nil {
						line += fmt.Sprintf(" %s %s=%s", p, w.metric, got[p][w.metric])
						if v, ok := got[p]["cpu_ns_per_op"]; ok {
							line += fmt.Sprintf(" cpu_ns_per_op=%s allocs_per_op=%s", v, got[p]["allocs_per_op"])
						}
					}
				}
				b.Log(line)
				raw = append(raw, line)
			}
		}
	}

	var md strings.Builder
	cpu := "unknown"
	if info, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(info), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	fmt.Fprintf(&md, "Generated by `make bench-peers` on %s: %d CPUs (%s), %s/%s, one standalone\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), cpu, runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&md, "ZooKeeper 3.8 server (full JIT, no fsync, empty containers reaped every 60 s as by default) shared by every peer, %d rounds.\n", *rounds)
	md.WriteString("Each figure is the median over the rounds of a ratio taken within one round:\n")
	md.WriteString("how many times faster zkrecipes is than the peer (above 1: faster).\n")
	md.WriteString("The networks: `loopback`, client and server on one machine; `rtt1ms`, every peer's\n")
	md.WriteString("connection through a proxy that holds each byte 0.5 ms each way, in order (a server\n")
	md.WriteString("in the same data centre); `pinned`, loopback with the server's JVM on CPU 0 and every\n")
	md.WriteString("client process on CPU 1 (`taskset`), where the server alone is the limit. RTT is the\n")
	md.WriteString("measured median round trip of a bare `exists`.\n\n")
	md.WriteString("| workload | metric | network | RTT | vs `zk.Lock` | vs Curator | zkrecipes / floor |\n|---|---|---|---|---|---|---|\n")
	for i, w := range workloads {
		for ni, n := range networks {
			c := cells[ni][i]
			if len(c.vsZK)+len(c.vsCurator) == 0 {
				continue
			}
			fmt.Fprintf(&md, "| %s | %s | %s | %s | %s | %s | %s |\n", w.name, w.metric, n.name, fmtRTT(n.rtt),
				ratio(c.vsZK), ratio(c.vsCurator), ratio(c.floor))
		}
	}
	md.WriteString("\nThe client's own cost per operation, zkrecipes beside `zk.Lock` in the same round\n")
	md.WriteString("(process CPU time, user and system, and heap allocations of the `zkr-bench` process\n")
	md.WriteString("over the timed loop, divided by the operations; medians; a ratio below 1: zkrecipes\n")
	md.WriteString("costs less):\n\n")
	md.WriteString("| workload | network | CPU µs/op, zkrecipes / `zk.Lock` | ratio | allocs/op, zkrecipes / `zk.Lock` | ratio |\n|---|---|---|---|---|---|\n")
	for i, w := range workloads {
		for ni, n := range networks {
			c := cells[ni][i]
			if len(c.cpuRatio) == 0 {
				continue
			}
			fmt.Fprintf(&md, "| %s | %s | %s / %s | %s | %s / %s | %s |\n", strings.SplitN(w.name, ":", 2)[0], n.name,
				median(c.cpuUS[0], "%.0f"), median(c.cpuUS[1], "%.0f"), ratio(c.cpuRatio),
				median(c.allocs[0], "%.0f"), median(c.allocs[1], "%.0f"), ratio(c.allocRatio))
		}
	}
	fmt.Fprintf(&md, "\n`zk.Lock` runs on go-zookeeper's own sessions, as its users run it (not over zkrecipes' connection layer). "+
		"The floor (keys) is a bare ephemeral-sequential create and delete per operation on a go-zookeeper session, "+
		"the least any lock of this shape makes the server do, measured in the same `zkr-bench` run.\n\n")
	if err := errors.Join(err8, err10k); err != nil {
		fmt.Fprintf(&md, "Queued waiters, one session (zkrecipes, %s): the run failed: %v\n", networks[0].name, err)
	} else {
		fmt.Fprintf(&md, "Queued waiters, one session (zkrecipes, %s): at 10,000, %s goroutines and %s bytes per waiter; "+
			"per handoff %s µs at 10,000 against %s µs at 8 (%.2f×).\n", networks[0].name,
			q10k["goroutines_per_waiter"], q10k["bytes_per_waiter"], q10k["per_handoff_us"], q8["per_handoff_us"],
			num(b, q10k, "per_handoff_us")/num(b, q8, "per_handoff_us"))
	}
	md.WriteString("\n<details><summary>Every round</summary>\n\n```\n")
	for _, l := range raw {
		md.WriteString(l + "\n")
	}
	md.WriteString("```\n</details>\n")
	b.Log("\n" + md.String())
	if *out != "" {
		require.NoError(b, rewriteSection(*out, md.String()))
	}
}

func fmtRTT(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000)
}

func median(v []float64, format string) string {
	if len(v) == 0 {
		return "—"
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return fmt.Sprintf(format, s[len(s)/2])
}

func ratio(v []float64) string { return median(v, "%.2f") }

const begin, end = "<!-- bench-peers:begin -->", "<!-- bench-peers:end -->"

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
		s = strings.TrimRight(s, "\n") + "\n\n## zkrecipes beside its peers\n\n" + section + "\n"
	} else {
		s = s[:i] + section + s[j+len(end):]
	}
	return os.WriteFile(file, []byte(s), 0o644)
}
