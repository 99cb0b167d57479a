package framework_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/retry"
)

// The bytes of a request as go-zookeeper v1.0.4 writes them and the server
// counts them against jute.maxbuffer: everything after the packet's 4-byte
// length. Written out here from the wire format, apart from the code under
// test: the server's answers at the boundary check both.
const (
	reqHeader   = 8 // xid, opcode
	multiHeader = 9 // type, done, err: before each op and once at the end
	openACL     = 4 + 4 + (4 + len("world")) + (4 + len("anyone"))
)

func createBytes(path string, ttl bool) int {
	n := (4 + len(path)) + 4 + openACL + 4 // path, data's length, ACL, flags
	if ttl {
		n += 8
	}
	return n
}

func setBytes(path string) int { return (4 + len(path)) + 4 + 4 } // path, data's length, version

func checkBytes(path string) int { return (4 + len(path)) + 4 } // path, version

// protectedLen is the length of a protected create's path as sent.
func protectedLen(path string) int { return len(path) + len("_c_") + 36 + len("-") }

// sizeRow is one write path: do writes n bytes of data with it, overhead
// is what the request adds to them, and applied says whether a write of n
// bytes landed.
type sizeRow struct {
	name     string
	overhead int
	do       func(ctx context.Context, c *framework.Client, data []byte) error
	applied  func(t *testing.T, c *framework.Client, n int) bool
	wantOp   string
	wantPath string
}

// nodeHas reports whether path exists with n bytes of data.
func nodeHas(path string) func(t *testing.T, c *framework.Client, n int) bool {
	return func(t *testing.T, c *framework.Client, n int) bool {
		ok, st, err := c.Exists(testCtx(t), path)
		require.NoError(t, err)
		return ok && int(st.DataLength) == n
	}
}

// childHas reports whether dir has a child with n bytes of data.
func childHas(dir string) func(t *testing.T, c *framework.Client, n int) bool {
	return func(t *testing.T, c *framework.Client, n int) bool {
		kids, _, err := c.Children(testCtx(t), dir)
		if errors.Is(err, zk.ErrNoNode) {
			return false
		}
		require.NoError(t, err)
		for _, k := range kids {
			if nodeHas(framework.Join(dir, k))(t, c, n) {
				return true
			}
		}
		return false
	}
}

func sizeRows() []sizeRow {
	create := func(path string, opts ...framework.CreateOption) func(context.Context, *framework.Client, []byte) error {
		return func(ctx context.Context, c *framework.Client, data []byte) error {
			_, err := c.Create(ctx, path, data, opts...)
			return err
		}
	}
	return []sizeRow{
		{name: "create", overhead: reqHeader + createBytes("/size/create", false),
			do: create("/size/create"), applied: nodeHas("/size/create"), wantOp: "create", wantPath: "/size/create"},
		{name: "create ephemeral", overhead: reqHeader + createBytes("/size/eph", false),
			do:      create("/size/eph", framework.WithMode(framework.Ephemeral)),
			applied: nodeHas("/size/eph"), wantOp: "create", wantPath: "/size/eph"},
		{name: "create sequential", overhead: reqHeader + createBytes("/size/seq/n-", false),
			do:      create("/size/seq/n-", framework.WithMode(framework.PersistentSequential), framework.WithParents()),
			applied: childHas("/size/seq"), wantOp: "create", wantPath: "/size/seq/n-"},
		{name: "create container", overhead: reqHeader + createBytes("/size/container", false),
			do:      create("/size/container", framework.WithMode(framework.Container)),
			applied: nodeHas("/size/container"), wantOp: "create", wantPath: "/size/container"},
		{name: "create with TTL", overhead: reqHeader + createBytes("/size/ttl", true),
			do:      create("/size/ttl", framework.WithMode(framework.PersistentWithTTL), framework.WithTTL(time.Hour)),
			applied: nodeHas("/size/ttl"), wantOp: "create", wantPath: "/size/ttl"},
		{name: "protected create", overhead: reqHeader + createBytes(strings.Repeat("x", protectedLen("/size/prot/p")), false),
			do:      create("/size/prot/p", framework.Protected(), framework.WithParents()),
			applied: childHas("/size/prot"), wantOp: "create", wantPath: "/size/prot/p"},
		{name: "queue create", overhead: reqHeader + createBytes(strings.Repeat("x", protectedLen("/size/q/lock-")), false),
			do: func(ctx context.Context, c *framework.Client, data []byte) error {
				_, err := c.Enqueue(ctx, "/size/q/lock-", data)
				return err
			},
			applied: childHas("/size/q"), wantOp: "create", wantPath: "/size/q/lock-"},
		{name: "set", overhead: reqHeader + setBytes("/size/target"),
			do: func(ctx context.Context, c *framework.Client, data []byte) error {
				_, err := c.Set(ctx, "/size/target", data, -1)
				return err
			},
			applied: nodeHas("/size/target"), wantOp: "set", wantPath: "/size/target"},
		{name: "multi", overhead: reqHeader + multiHeader + checkBytes("/size/target") + multiHeader + setBytes("/size/target") + multiHeader,
			do: func(ctx context.Context, c *framework.Client, data []byte) error {
				_, err := c.Multi(ctx, &zk.CheckVersionRequest{Path: "/size/target", Version: -1},
					&zk.SetDataRequest{Path: "/size/target", Data: data, Version: -1})
				return err
			},
			applied: nodeHas("/size/target"), wantOp: "multi", wantPath: "/size/target"},
		{name: "multi sent once", overhead: reqHeader + multiHeader + createBytes("/size/m", false) + multiHeader + checkBytes("/size/target") + multiHeader,
			do: func(ctx context.Context, c *framework.Client, data []byte) error {
				_, err := c.MultiOnce(ctx, &zk.CreateRequest{Path: "/size/m", Data: data},
					&zk.CheckVersionRequest{Path: "/size/target", Version: -1})
				return err
			},
			applied: nodeHas("/size/m"), wantOp: "multi", wantPath: "/size/m"},
	}
}

// Every write path sends a request of exactly the server's limit, and
// refuses one byte more before sending anything, with ErrTooLarge in an
// *OpError naming the operation and the path: the link stays up, and
// nothing is applied. (Sent, it made the server close the link, and the
// client resent it on every reconnect.)
func TestWritesOverTheSizeLimitAreRefusedBeforeSending(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	require.Equal(t, framework.DefaultMaxRequestSize, c.MaxRequestSize())
	for _, row := range sizeRows() {
		t.Run(row.name, func(t *testing.T) {
			t.Cleanup(func() { clearTree(t, c, "/size") })
			mustCreate(t, c, "/size/target", nil, framework.WithParents())
			n := framework.DefaultMaxRequestSize - row.overhead

			link := testkit.WatchLink(t, c)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			err := row.do(ctx, c, bytes.Repeat([]byte{'x'}, n+1))
			require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
			assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
			var oe *framework.OpError
			if assert.ErrorAs(t, err, &oe) {
				assert.Equal(t, row.wantOp, oe.Op)
				assert.Equal(t, row.wantPath, oe.Path)
			}
			assert.Contains(t, err.Error(), fmt.Sprint(framework.DefaultMaxRequestSize+1), "the request's size")
			assert.Contains(t, err.Error(), fmt.Sprint(framework.DefaultMaxRequestSize), "the limit")
			link.RequireUnbroken(t)
			assert.False(t, row.applied(t, c, n+1), "applied")

			require.NoError(t, row.do(testCtx(t), c, bytes.Repeat([]byte{'x'}, n)), "exactly the limit")
			assert.True(t, row.applied(t, c, n), "the write of the limit's worth did not land")
			link.RequireUnbroken(t)
		})
	}
}

// clearTree deletes path and everything under it.
func clearTree(t *testing.T, c *framework.Client, path string) {
	t.Helper()
	// Not testCtx: t's own context is over by the time cleanups run.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Delete(ctx, path, -1, framework.WithChildren()); !errors.Is(err, zk.ErrNoNode) {
		require.NoError(t, err)
	}
}

// Under a namespace the namespace is part of every path sent: the limit
// counts it.
func TestSizeLimitCountsTheNamespace(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs(), framework.WithNamespace("app"))
	mustCreate(t, c, "/target", nil)
	n := framework.DefaultMaxRequestSize - reqHeader - setBytes("/app/target")
	link := testkit.WatchLink(t, c)
	_, err := c.Set(testCtx(t), "/target", make([]byte, n+1), -1)
	require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
	link.RequireUnbroken(t)
	_, err = c.Set(testCtx(t), "/target", make([]byte, n), -1)
	require.NoError(t, err)
	link.RequireUnbroken(t)
}

// With the server's jute.maxbuffer raised, and the client's limit with it,
// a value over ZooKeeper's default limit is written.
func TestRaisedSizeLimitWritesALargerValue(t *testing.T) {
	const limit = 1536*1024 - 4 // go-zookeeper's send buffer, less the packet's length
	cl := zktest.Standalone(t, zktest.WithSystemProperty("jute.maxbuffer", fmt.Sprint(limit)))
	c := newClient(t, cl.Addrs(), framework.WithMaxRequestSize(limit))
	require.Equal(t, limit, c.MaxRequestSize())
	value := bytes.Repeat([]byte{'v'}, 1200*1024)
	link := testkit.WatchLink(t, c)
	mustCreate(t, c, "/big", value)
	got, _, err := c.Get(testCtx(t), "/big")
	require.NoError(t, err)
	assert.Equal(t, len(value), len(got))

	// The largest limit the client takes is the largest request
	// go-zookeeper can write, and the server reads it.
	n := limit - reqHeader - setBytes("/big")
	_, err = c.Set(testCtx(t), "/big", make([]byte, n), -1)
	require.NoError(t, err)
	_, err = c.Set(testCtx(t), "/big", make([]byte, n+1), -1)
	require.ErrorIs(t, err, zkrecipes.ErrTooLarge)
	link.RequireUnbroken(t)
}

// The limit is one go-zookeeper can send, and positive.
func TestMaxRequestSizeOutOfRangeIsRefused(t *testing.T) {
	for _, n := range []int{0, -1, 1536 * 1024} {
		_, err := framework.Dial(testCtx(t), []string{"127.0.0.1:1"}, framework.WithMaxRequestSize(n))
		assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument, "%d", n)
	}
}

// A request over ZooKeeper's default limit, allowed by a client whose
// limit is raised above what its server takes, is sent once, whatever the
// retry policy: the server closes the link on it, and the call fails with
// zkrecipes.ErrOutcomeUnknown, saying the server may have refused it for its size,
// instead of sending it again on every reconnect. The client recovers.
func TestRequestOverTheDefaultLimitIsSentAtMostOnce(t *testing.T) {
	const limit = 1536*1024 - 4
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs(), framework.WithMaxRequestSize(limit),
		framework.WithRetryPolicy(retry.Forever(10*time.Millisecond)),
		framework.WithSessionTimeout(testkit.SessionTimeout))
	value := bytes.Repeat([]byte{'v'}, 1200*1024)

	for _, row := range sizeRows() {
		t.Run(row.name, func(t *testing.T) {
			_, err := c.WaitConnected(testCtx(t))
			require.NoError(t, err)
			t.Cleanup(func() { clearTree(t, c, "/size") })
			mustCreate(t, c, "/size/target", nil, framework.WithParents())
			sub := c.Subscribe()
			t.Cleanup(sub.Close)
			defer sub.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 8*time.Second)
			defer cancel()
			start := time.Now()
			err = row.do(ctx, c, value)
			took := time.Since(start)
			require.ErrorIs(t, err, zkrecipes.ErrOutcomeUnknown, "after %v", took)
			assert.NotErrorIs(t, err, context.DeadlineExceeded, "it waited for the caller's deadline")
			assert.Contains(t, err.Error(), "size")

			// The client recovers, on the same session, and the request
			// is not sent again: one suspension, no more.
			_, _, err = c.Exists(testCtx(t), "/")
			require.NoError(t, err)
			suspended := 0
			quiet := time.After(2 * time.Second)
		count:
			for {
				select {
				case ev := <-sub.Changes():
					if ev.State == conn.StateSuspended {
						suspended++
					}
					require.NotEqual(t, conn.StateLost, ev.State)
				case <-quiet:
					break count
				}
			}
			assert.Equal(t, 1, suspended, "suspensions")
		})
	}
}

// CheckCreate and CheckMulti measure a write as Create and Multi would,
// and send nothing: what a recipe checks a participant id or a seed with
// when it is made.
func TestCheckCreateAndCheckMultiMeasureWithoutSending(t *testing.T) {
	cl := zktest.Standalone(t)
	const limit = 200
	c := newClient(t, cl.Addrs(), framework.WithMaxRequestSize(limit))
	fits := limit - reqHeader - createBytes("/x", false)
	assert.NoError(t, c.CheckCreate("/x", make([]byte, fits)))
	assert.ErrorIs(t, c.CheckCreate("/x", make([]byte, fits+1)), zkrecipes.ErrTooLarge)
	protected := limit - reqHeader - createBytes(strings.Repeat("x", protectedLen("/x")), false)
	assert.NoError(t, c.CheckCreate("/x", make([]byte, protected), framework.Protected()))
	assert.ErrorIs(t, c.CheckCreate("/x", make([]byte, protected+1), framework.Protected()), zkrecipes.ErrTooLarge)
	assert.ErrorIs(t, c.CheckCreate("x", nil), zkrecipes.ErrInvalidPath)

	set := limit - reqHeader - multiHeader - setBytes("/x") - multiHeader
	assert.NoError(t, c.CheckMulti(&zk.SetDataRequest{Path: "/x", Data: make([]byte, set)}))
	assert.ErrorIs(t, c.CheckMulti(&zk.SetDataRequest{Path: "/x", Data: make([]byte, set+1)}), zkrecipes.ErrTooLarge)
	assert.ErrorIs(t, c.CheckMulti(&zk.CreateRequest{Path: "/x", Flags: zk.FlagContainer}), zkrecipes.ErrUnsupportedInMulti)
	assert.False(t, exists(t, c, "/x"), "nothing was sent")

	tiny := newClient(t, cl.Addrs(), framework.WithMaxRequestSize(10))
	assert.ErrorIs(t, tiny.CheckMulti(), zkrecipes.ErrTooLarge, "even an empty multi has a header")
}
