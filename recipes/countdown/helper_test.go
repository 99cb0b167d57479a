package countdown_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/countdown"
)

func TestMain(m *testing.M) {
	if runHelper() {
		return
	}
	os.Exit(zktest.Main(m))
}

var (
	newClient = testkit.Client
	ctxT      = testkit.Ctx
	nodes     = testkit.Children
)

// The tests re-run their own binary as another process that sets a latch
// or counts it down, so that "another process" and "the process that set
// it is gone" are real.
const helperEnv = "ZKRECIPES_COUNTDOWN_HELPER"

// runHelper is called from TestMain; it returns true if this process is a
// helper (it then never returns: it prints what it did and waits to be
// killed). Spec: "addrs|path|op|n", op "set" (TrySetCount with n) or
// "down" (n CountDowns).
func runHelper() bool {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		return false
	}
	parts := strings.Split(spec, "|")
	n, _ := strconv.Atoi(parts[3])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Dial(ctx, strings.Split(parts[0], ","), framework.WithSessionTimeout(testkit.SessionTimeout))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	l, err := countdown.New(c, parts[1], n)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	switch parts[2] {
	case "set":
		ok, err := l.TrySetCount(ctx)
		fmt.Println("set", ok, err)
	case "down":
		counted := 0
		for range n {
			ok, err := l.CountDown(ctx)
			if err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			if ok {
				counted++
			}
		}
		fmt.Println("counted", counted)
	}
	select {} // until killed
}

// inProcess runs a helper process doing op with n on path, and returns
// once it has printed that it did.
func inProcess(t *testing.T, addrs []string, path, op string, n int, ready string) *exec.Cmd {
	t.Helper()
	return testkit.Child(t, helperEnv, testkit.ChildSpec(strings.Join(addrs, ","), path, op, n), ready)
}

func newLatch(t testing.TB, c *framework.Client, path string, count int, opts ...countdown.Option) *countdown.Countdown {
	t.Helper()
	l, err := countdown.New(c, path, count, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

// setLatch makes the latch at path with count, and fails t unless it did.
func setLatch(t testing.TB, c *framework.Client, path string, count int) *countdown.Countdown {
	t.Helper()
	l := newLatch(t, c, path, count)
	ok, err := l.TrySetCount(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	require.True(t, ok, "a latch was already at %s", path)
	return l
}

// exists reports whether path exists, as the server sees it.
func exists(t *testing.T, c *framework.Client, path string) bool {
	t.Helper()
	ok, _, err := c.Exists(ctxT(t, 10*time.Second), path)
	require.NoError(t, err)
	return ok
}

// countDowns returns the cd- children of the latch at path.
func countDowns(t *testing.T, c *framework.Client, path string) []string {
	t.Helper()
	var out []string
	for _, k := range nodes(t, c, path) {
		if strings.HasPrefix(k, "cd-") {
			out = append(out, k)
		}
	}
	return out
}

// markersGone waits until the latch at path has no cd- child left: a call
// that counted deletes its own, in the background if the link failed.
func markersGone(t *testing.T, c *framework.Client, path string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		kids, err := testkit.List(c, path)
		if assert.NoError(ct, err) {
			assert.Empty(ct, slices.DeleteFunc(kids, func(k string) bool { return !strings.HasPrefix(k, "cd-") }),
				"counted calls left cd- children")
		}
	}, 30*time.Second, 10*time.Millisecond)
}

// rawCount reads the 4-byte count at path as the server holds it, -1 if
// there is no node.
func rawCount(t *testing.T, c *framework.Client, path string) int {
	t.Helper()
	data, _, err := c.Get(ctxT(t, 10*time.Second), path)
	if errors.Is(err, zk.ErrNoNode) {
		return -1
	}
	require.NoError(t, err)
	require.Len(t, data, 4)
	return int(int32(binary.BigEndian.Uint32(data)))
}

// waitAsync runs Wait on a goroutine of its own.
func waitAsync(ctx context.Context, l *countdown.Countdown) <-chan error {
	out := make(chan error, 1)
	go func() { out <- l.Wait(ctx) }()
	return out
}

// receive waits for the result of an async call.
func receive[T any](t *testing.T, ch <-chan T, within time.Duration) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(within):
		var zero T
		t.Fatalf("no result within %v", within)
		return zero
	}
}

// stillWaiting fails t if ch delivers within window: absence cannot be
// proven by an event, so it is watched for a bounded time, taken only
// after the waiter has verifiably read the latch.
func stillWaiting(t *testing.T, ch <-chan error, window time.Duration) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("Wait returned %v while the latch was not open", err)
	case <-time.After(window):
	}
}

const absenceWindow = 500 * time.Millisecond

// latchNow reads the latch at path as the protocol does: its count, data
// version and gen- child.
func latchNow(t *testing.T, c *framework.Client, path string) (count int, version int32, gen string) {
	t.Helper()
	_, st, err := c.Get(ctxT(t, 10*time.Second), path)
	require.NoError(t, err)
	for _, k := range nodes(t, c, path) {
		if strings.HasPrefix(k, "gen-") {
			gen = k
		}
	}
	return rawCount(t, c, path), st.Version, gen
}

// countDownWithoutFinishing counts the latch at path down by one as the
// protocol does, and stops there: a process that died before it could
// delete a latch it took to zero.
func countDownWithoutFinishing(t *testing.T, c *framework.Client, path string) error {
	t.Helper()
	n, v, gen := latchNow(t, c, path)
	_, err := c.Multi(ctxT(t, 10*time.Second),
		&zk.CheckVersionRequest{Path: path + "/" + gen, Version: -1},
		&zk.CreateRequest{Path: path + "/cd-" + uuid.NewString()},
		&zk.SetDataRequest{Path: path, Data: encode(n - 1), Version: v})
	return err
}

// staleCountDown reads the latch at path now and returns a count-down
// multi built from that read, to be sent later.
func staleCountDown(t *testing.T, c *framework.Client, path string) func() error {
	t.Helper()
	n, v, gen := latchNow(t, c, path)
	return func() error {
		_, err := c.Multi(ctxT(t, 10*time.Second),
			&zk.CheckVersionRequest{Path: path + "/" + gen, Version: -1},
			&zk.CreateRequest{Path: path + "/cd-" + uuid.NewString()},
			&zk.SetDataRequest{Path: path, Data: encode(n - 1), Version: v})
		return err
	}
}

func encode(n int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(int32(n))) }
