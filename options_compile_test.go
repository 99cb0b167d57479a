package zkrecipes_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// compileCase is a program that uses the module's options, and whether the
// compiler must accept it.
type compileCase struct {
	name  string
	body  string // statements, with c a *framework.Client and ctx a context
	build bool
}

var compileCases = []compileCase{
	// What must compile: each option where it applies, common options on
	// both recipes of a package.
	{"mutex options on a Mutex", `_, _ = mutex.New(c, "/x", mutex.WithRevocable(), mutex.WithLeaseTime(time.Second), mutex.WithParticipantID("a"), mutex.WithWatcher(engine.NewWatcher(c)))`, true},
	{"common options on a SemaphoreMutex", `_, _ = mutex.NewSemaphoreMutex(c, "/x", mutex.WithLeaseTime(time.Second), mutex.WithParticipantID("a"))`, true},
	{"common and selector options on a Selector", `_, _ = leader.NewSelector(c, "/x", nil, leader.WithParticipantID("a"), leader.WithAutoRequeue())`, true},
	{"a common option on a Latch", `_, _ = leader.NewLatch(c, "/x", leader.WithParticipantID("a"))`, true},
	{"rwlock options on an RWLock", `_, _ = rwlock.New(c, "/x", rwlock.WithRevocable(), rwlock.WithLeaseTime(time.Second))`, true},
	{"semaphore options on a Semaphore", `_, _ = semaphore.New(c, "/x", 2, semaphore.WithLeaseTime(time.Second))`, true},
	{"delete options on a Delete", `_ = c.Delete(ctx, "/x", -1, framework.OwnedBy(1), framework.InBackground()); _ = c.Delete(ctx, "/x", -1, framework.Deferred())`, true},
	{"create options on a Create", `_, _ = c.Create(ctx, "/x", nil, framework.WithParents(), framework.Protected())`, true},
	{"counter options on a Long", `_, _ = counter.NewLong(c, "/x", counter.WithOptimisticRetry(retry.Default()), counter.WithPromotedToLock("/l", time.Second, retry.Default()), counter.WithParticipantID("a"))`, true},
	{"counter options on an Integer and a Bytes", `_, _ = counter.NewInteger(c, "/x", counter.WithOptimisticRetry(retry.Default())); _, _ = counter.NewBytes(c, "/x", counter.WithParticipantID("a"))`, true},
	{"a countdown option on a Countdown", `_, _ = countdown.New(c, "/x", 3, countdown.WithParticipantID("a"))`, true},
	{"a shared value and count without options", `_, _ = shared.NewValue(c, "/x", nil); _, _ = shared.NewCount(c, "/x", 1)`, true},
	{"cache options on a Cache", `_, _ = cache.New(c, "/x", cache.Tree(2), cache.WithBufferSize(10), cache.WithoutData())`, true},
	{"persistent options on a Node", `_, _ = persistent.New(c, "/x", nil, persistent.Protected(), persistent.Sequential(), persistent.WithTTL(time.Minute))`, true},
	{"ttl options on a TTLNode", `_, _ = persistent.NewTTL(c, "/x", nil, time.Minute, persistent.WithChildName("t"), persistent.WithTouchFactor(3))`, true},
	{"provider options on a Provider", `d, _ := discovery.New(c, "/x"); _, _ = d.NewProvider("s", discovery.WithStrategy(discovery.Sticky(discovery.Random())), discovery.WithDownInstancePolicy(time.Second, 2))`, true},
	{"partition options on a Partitioner", `_, _ = partition.New(c, "/x", "m", partition.List("a"), partition.WithWorker(func(context.Context, string, *hold.Hold) {}), partition.WithPayload(nil))`, true},

	// What must not: an option of one recipe given to another.
	{"a Mutex option on a SemaphoreMutex", `_, _ = mutex.NewSemaphoreMutex(c, "/x", mutex.WithRevocable())`, false},
	{"a Mutex's watcher on a SemaphoreMutex", `_, _ = mutex.NewSemaphoreMutex(c, "/x", mutex.WithWatcher(engine.NewWatcher(c)))`, false},
	{"an rwlock option on a Mutex", `_, _ = mutex.New(c, "/x", rwlock.WithRevocable())`, false},
	{"a semaphore option on a Mutex", `_, _ = mutex.New(c, "/x", semaphore.WithLeaseTime(time.Second))`, false},
	{"a mutex option on an RWLock", `_, _ = rwlock.New(c, "/x", mutex.WithLeaseTime(time.Second))`, false},
	{"a selector option on a Latch", `_, _ = leader.NewLatch(c, "/x", leader.WithAutoRequeue())`, false},
	{"a mutex option on a Latch", `_, _ = leader.NewLatch(c, "/x", mutex.WithParticipantID("a"))`, false},
	{"a client option on a recipe", `_, _ = mutex.New(c, "/x", framework.WithNamespace("app"))`, false},
	{"a delete option on a Create", `_, _ = c.Create(ctx, "/x", nil, framework.InBackground())`, false},
	{"a create option on a Delete", `_ = c.Delete(ctx, "/x", -1, framework.WithParents())`, false},
	{"an engine option on a Mutex", `_, _ = mutex.New(c, "/x", engine.WithRevocable())`, false},
	{"a recipe option on Dial", `_, _ = framework.Dial(ctx, nil, mutex.WithRevocable())`, false},
	{"a retry option on Dial", `_, _ = framework.Dial(ctx, nil, retry.WithNotify(nil))`, false},
	{"a mutex option on a Long", `_, _ = counter.NewLong(c, "/x", mutex.WithParticipantID("a"))`, false},
	{"a client retry policy on a counter", `_, _ = counter.NewLong(c, "/x", framework.WithRetryPolicy(retry.Default()))`, false},
	{"a counter option on a Countdown", `_, _ = countdown.New(c, "/x", 3, counter.WithParticipantID("a"))`, false},
	{"a countdown option on a Mutex", `_, _ = mutex.New(c, "/x", countdown.WithParticipantID("a"))`, false},
	{"an option on a shared Value", `_, _ = shared.NewValue(c, "/x", nil, mutex.WithParticipantID("a"))`, false},
	{"an option on a shared Count", `_, _ = shared.NewCount(c, "/x", 1, counter.WithParticipantID("a"))`, false},
	{"a mutex option on a Cache", `_, _ = cache.New(c, "/x", cache.Children(), mutex.WithParticipantID("a"))`, false},
	{"a cache option on a Mutex", `_, _ = mutex.New(c, "/x", cache.WithoutData())`, false},
	{"a Node option on a TTLNode", `_, _ = persistent.NewTTL(c, "/x", nil, time.Minute, persistent.Protected())`, false},
	{"a TTLNode option on a Node", `_, _ = persistent.New(c, "/x", nil, persistent.WithChildName("t"))`, false},
	{"a create option on a Node", `_, _ = persistent.New(c, "/x", nil, framework.WithParents())`, false},
	{"a mutex option on a Partitioner", `_, _ = partition.New(c, "/x", "m", partition.List("a"), mutex.WithParticipantID("a"))`, false},
	{"a partition option on a Mutex", `_, _ = mutex.New(c, "/x", partition.WithPayload(nil))`, false},
}

const compilePrelude = `package main

import (
	"context"
	"time"

	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/counter"
	"github.com/zkrecipes/zkrecipes/recipes/countdown"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
	"github.com/zkrecipes/zkrecipes/recipes/persistent"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
	"github.com/zkrecipes/zkrecipes/retry"
)

var (
	_ = time.Second
	_ engine.Option
	_ *hold.Hold
	_ cache.Option
	_ counter.Option
	_ countdown.Option
	_ discovery.Instance
	_ partition.Option
	_ persistent.Option
	_ shared.Versioned[int32]
	_ leader.Func
	_ mutex.Option
	_ rwlock.Option
	_ semaphore.Option
	_ retry.Option
)

func main() {
	var c *framework.Client
	ctx := context.Background()
	_, _ = c, ctx
`

// An option given to a recipe it does not apply to does not compile: each
// recipe (and the client, a create, a delete, a retry) has an option type
// of its own. Every case is a program of its own, built against this
// module in a throwaway module, as a user's code is.
func TestAnOptionOfOneRecipeOnAnotherDoesNotCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Dir(here)
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module compilecheck\n\ngo 1.22\n\nrequire github.com/zkrecipes/zkrecipes v0.0.0\n\nreplace github.com/zkrecipes/zkrecipes => "+root+"\n")
	write("go.sum", string(sum))
	for i, tc := range compileCases {
		write(filepath.Join(caseDir(i), "main.go"), compilePrelude+"\t"+tc.body+"\n}\n")
	}
	// One build for all: it reports each package that does not compile.
	cmd := exec.Command("go", "build", "-o", os.DevNull, "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	out, _ := cmd.CombinedOutput()
	report := string(out)
	// The errors of each package that failed, under its "# path" line.
	errs := map[string]string{}
	for _, block := range strings.Split(report, "# compilecheck/")[1:] {
		name, rest, _ := strings.Cut(block, "\n")
		errs[name] = rest
	}
	for i, tc := range compileCases {
		msg, failed := errs[caseDir(i)]
		switch {
		case tc.build && failed:
			t.Errorf("%s: does not compile, and must:\n%s", tc.name, msg)
		case !tc.build && !failed:
			t.Errorf("%s: compiles, and must not", tc.name)
		case !tc.build && !strings.Contains(msg, "does not implement") && !strings.Contains(msg, "too many arguments"):
			// "too many arguments": the recipe takes no option at all.
			t.Errorf("%s: fails for another reason than the option's type:\n%s", tc.name, msg)
		}
	}
	if t.Failed() {
		t.Logf("go build said:\n%s", report)
	}
}

func caseDir(i int) string { return fmt.Sprintf("case%02d", i) }
