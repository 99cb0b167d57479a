package chaos_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/integration/chaos"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

func TestMain(m *testing.M) {
	if chaos.IsContender() {
		os.Exit(chaos.RunContender())
	}
	goleak.VerifyTestMain(m)
}

// TestChaos is the suite: every recipe in turn against one 3-node ensemble,
// contenders in their own processes behind their own proxies, a nemesis, and
// the checks. It runs with make chaos (ZKR_CHAOS=short, about half a minute
// of faults per recipe) or make chaos LONG=1 (ZKR_CHAOS=long, five minutes).
// ZKR_CHAOS_SEED repeats a run's fault schedule, ZKR_CHAOS_RECIPES picks
// recipes and ZKR_CHAOS_FAULTS fault kinds (comma-separated), ZKR_CHAOS_OUT
// keeps the histories.
func TestChaos(t *testing.T) {
	mode := os.Getenv("ZKR_CHAOS")
	if mode == "" {
		t.Skip("the chaos suite runs with `make chaos` (ZKR_CHAOS=short or long)")
	}
	duration := 30 * time.Second
	if mode == "long" {
		duration = 5 * time.Minute
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("ZKR_CHAOS_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("ZKR_CHAOS_SEED: %v", err)
		}
	}
	t.Logf("seed %d (ZKR_CHAOS_SEED=%d repeats the fault schedule)", seed, seed)
	out := os.Getenv("ZKR_CHAOS_OUT")
	if out == "" {
		out = t.TempDir()
	}
	recipes := []chaos.Recipe{chaos.Mutex, chaos.RWLock, chaos.Semaphore, chaos.Latch, chaos.Selector, chaos.Atomic, chaos.Countdown, chaos.SharedCount, chaos.Barrier, chaos.Cache, chaos.Partition, chaos.Discovery}
	if s := os.Getenv("ZKR_CHAOS_RECIPES"); s != "" {
		recipes = nil
		for _, name := range strings.Split(s, ",") {
			recipes = append(recipes, chaos.Recipe(strings.TrimSpace(name)))
		}
	}

	var faults []chaos.Fault
	if s := os.Getenv("ZKR_CHAOS_FAULTS"); s != "" {
		for _, name := range strings.Split(s, ",") {
			faults = append(faults, chaos.Fault(strings.TrimSpace(name)))
		}
	}

	cluster := zktest.Ensemble(t, 3, chaos.EnsembleOptions()...)
	fence, err := chaos.StartFence()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fence.Close() })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := chaos.Env{Cluster: cluster, Fence: fence, Exe: exe}

	var summaries []string
	for i, recipe := range recipes {
		t.Run(string(recipe), func(t *testing.T) {
			res := chaos.Run(t, env, chaos.Config{
				Recipe:   recipe,
				Duration: duration,
				Seed:     seed + uint64(i),
				Faults:   faults,
				OutDir:   filepath.Join(out, string(recipe)),
			})
			t.Log("\n" + res.Summary)
			summaries = append(summaries, res.Summary)
			for _, v := range res.Report.Violations {
				t.Errorf("%s: %s", v.Kind, v.Detail)
			}
			if recipe == chaos.SharedCount || recipe == chaos.Cache || recipe == chaos.Discovery {
				return // no holds: its checker fails a run without progress itself
			}
			if recipe == chaos.Partition {
				return // holds of many items at once: its checker has its own
			}
			// A run that never put a holder in the position fencing is for
			// has not tested it: every holder of these recipes writes, and
			// the nemesis freezes one between its check and its write.
			rep := res.Report
			if slices.Contains([]chaos.Recipe{chaos.Mutex, chaos.Latch, chaos.Selector}, recipe) && rep.StaleFenced == 0 {
				t.Errorf("no stale write was refused: the SIGSTOP case was not exercised (faults: %v)", rep.Faults)
			}
			// Every recipe with holds writes its ZooKeeper register through
			// Fenced only; a run that committed nothing has not tested it.
			if recipe != chaos.Selector && recipe != chaos.Atomic && recipe != chaos.Countdown && recipe != chaos.Barrier && rep.RegisterWrites == 0 {
				t.Errorf("no fenced write reached the ZooKeeper register")
			}
			// The guarantee no other library gives, a write that cannot
			// commit once its hold's node is gone, is tested at the server
			// only by a write already sent when the node went.
			if recipe == chaos.Mutex && rep.StalledWrites == 0 {
				t.Errorf("no fenced write was held while its hold's node was deleted: stall-write took no effect")
			}
			// The counter's checker reports no progress as a violation
			// itself; here, a run that never lost a reply has not tested
			// what the recipe does about it.
			if recipe == chaos.Atomic && rep.Counter.Unknown+rep.Counter.InFlight == 0 {
				t.Errorf("no write of unknown outcome: the lost-reply case was not exercised")
			}
			if rep.FaultsOnHolder == 0 {
				t.Errorf("no fault hit a holder")
			}
		})
	}
	all := fmt.Sprintf("seed %d\n%s", seed, strings.Join(summaries, ""))
	if err := os.WriteFile(filepath.Join(out, "summary.txt"), []byte(all), 0o644); err != nil {
		t.Error(err)
	}
}
