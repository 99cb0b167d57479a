// Package peers measures zkrecipes beside its peers, go-zookeeper's zk.Lock
// and Curator 5.4, on the same workloads against one throwaway server, and
// writes the ratios into docs/benchmarks.md:
//
//	make bench-peers
//
// zkrecipes and zk.Lock run through zkr-bench (--peer zklock), Curator
// through the Java agent of the interoperability tests, whose mutex-bench
// runs the same loops. Each round runs every peer once per workload, in an
// order that rotates from round to round (the server's JIT and the VM's
// drift favour whoever runs later); ratios are taken within a round and the
// table shows their median, never absolute numbers from different runs.
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

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/curator"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
)

var (
	out    = flag.String("peers.out", "", "markdown file whose bench-peers section is rewritten (empty: print only)")
	rounds = flag.Int("peers.rounds", 5, "rounds of every workload")
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
}

var workloads = []workload{
	{"uncontended: 1 session, acquire+release", "p50_us", true,
		[]string{"--mode", "uncontended", "--n", "500"}, "mutex-bench uncontended %s 500 0"},
	{"contended: 8 sessions on one lock, 5 s", "per_s", false,
		[]string{"--mode", "contended", "--clients", "8", "--duration", "5s"}, "mutex-bench contended %s 8 5000"},
	{"keys: 1 session, 32 goroutines, a lock per key of 1000, 5 s", "per_s", false,
		[]string{"--mode", "keys", "--keys", "1000", "--workers", "32", "--duration", "5s"}, "mutex-bench keys %s 1000 32"},
	{"queue: 1000 waiters over 10 sessions, drained", "per_handoff_us", true,
		[]string{"--mode", "queue", "--waiters", "1000"}, "mutex-bench queue %s 1000 0"},
	{"latch: graceful leader handoff", "p50_us", true,
		[]string{"--mode", "latch", "--rounds", "100"}, "latch-bench %s 100"},
}

func BenchmarkPeers(b *testing.B) {
	root, err := filepath.Abs("../..")
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
	cl := zktest.Standalone(b, zktest.WithFullJIT(), zktest.WithContainerCheck(time.Minute))
	connect := strings.Join(cl.DirectAddrs(), ",")
	java := curator.Agent(b).Start(b, connect, 10*time.Second)
	seq := 0
	path := func() string { seq++; return "/peers/p" + strconv.Itoa(seq) }
	run := func(w workload, peer string) map[string]string {
		b.Helper()
		if peer == "curator" {
			if w.agent == "" {
				return nil
			}
			cmd := fmt.Sprintf(w.agent, path())
			prefix := strings.Fields(cmd)[0]
			line := java.Call(b, cmd, prefix, 10*time.Minute)
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
		c := exec.CommandContext(ctx, zkr, append([]string{"--connect", connect, "--peer", peer}, w.zkr...)...)
		c.Stderr = os.Stderr
		line, err := c.Output()
		require.NoError(b, err, "zkr-bench --peer %s %v", peer, w.zkr)
		return fields(string(line))
	}

	// Warm-up: the server's JIT, and the agent's.
	for _, peer := range []string{"zkrecipes", "zklock", "curator"} {
		run(workloads[1], peer)
	}
	peers := []string{"zkrecipes", "zklock", "curator"}
	type cell struct{ vsZK, vsCurator, floor []float64 }
	cells := make([]cell, len(workloads))
	raw := make([][]string, len(workloads))
	for r := range *rounds {
		for i, w := range workloads {
			got := map[string]map[string]string{}
			for k := range peers {
				peer := peers[(k+r)%len(peers)]
				got[peer] = run(w, peer)
			}
			ours := num(b, got["zkrecipes"], w.metric)
			speed := func(peer string) float64 {
				theirs := num(b, got[peer], w.metric)
				if w.lowerBetter {
					return theirs / ours
				}
				return ours / theirs
			}
			if got["zklock"] != nil {
				cells[i].vsZK = append(cells[i].vsZK, speed("zklock"))
			}
			if got["curator"] != nil {
				cells[i].vsCurator = append(cells[i].vsCurator, speed("curator"))
			}
			if fl, ok := got["zkrecipes"]["floor_per_s"]; ok {
				f, _ := strconv.ParseFloat(fl, 64)
				cells[i].floor = append(cells[i].floor, ours/f)
			}
			line := fmt.Sprintf("round %d %s:", r+1, w.name)
			for _, p := range peers {
				if got[p] != nil {
					line += fmt.Sprintf(" %s %s=%s", p, w.metric, got[p][w.metric])
				}
			}
			b.Log(line)
			raw[i] = append(raw[i], line)
		}
	}

	// What a parked waiter costs, and whether a deep queue slows handoffs:
	// ours alone (the peers' footprints are not comparable in-process).
	deep := func(n string) (map[string]string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		var stderr strings.Builder
		c := exec.CommandContext(ctx, zkr, "--connect", connect, "--mode", "queue", "--waiters", n, "--sessions", "1")
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
	md.WriteString("how many times faster zkrecipes is than the peer (above 1: faster).\n\n")
	md.WriteString("| workload | metric | vs `zk.Lock` | vs Curator | zkrecipes / floor |\n|---|---|---|---|---|\n")
	for i, w := range workloads {
		fmt.Fprintf(&md, "| %s | %s | %s | %s | %s |\n", w.name, w.metric, ratio(cells[i].vsZK), ratio(cells[i].vsCurator), ratio(cells[i].floor))
	}
	fmt.Fprintf(&md, "\n`zk.Lock` runs on go-zookeeper's own sessions, as its users run it (not over zkrecipes' connection layer). "+
		"The floor (keys) is a bare ephemeral-sequential create and delete per operation on a go-zookeeper session, "+
		"the least any lock of this shape makes the server do, measured in the same `zkr-bench` run.\n\n")
	if err := errors.Join(err8, err10k); err != nil {
		fmt.Fprintf(&md, "Queued waiters, one session (zkrecipes): the run failed: %v\n", err)
	} else {
		fmt.Fprintf(&md, "Queued waiters, one session (zkrecipes): at 10,000, %s goroutines and %s bytes per waiter; "+
			"per handoff %s µs at 10,000 against %s µs at 8 (%.2f×).\n",
			q10k["goroutines_per_waiter"], q10k["bytes_per_waiter"], q10k["per_handoff_us"], q8["per_handoff_us"],
			num(b, q10k, "per_handoff_us")/num(b, q8, "per_handoff_us"))
	}
	md.WriteString("\n<details><summary>Every round</summary>\n\n```\n")
	for _, rs := range raw {
		for _, l := range rs {
			md.WriteString(l + "\n")
		}
	}
	md.WriteString("```\n</details>\n")
	b.Log("\n" + md.String())
	if *out != "" {
		require.NoError(b, rewriteSection(*out, md.String()))
	}
}

func ratio(v []float64) string {
	if len(v) == 0 {
		return "—"
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return fmt.Sprintf("%.2f", s[len(s)/2])
}

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
