// Package demo is what `make demo` runs until the zkr CLI exists: it starts a
// throwaway ZooKeeper and shows the queue every lock recipe is built on.
package demo

import (
	"io"
	"log"
	"sort"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/zktest"
)

// TestDemo queues three sessions on one lock path with ephemeral-sequential
// nodes, as Curator's InterProcessMutex does, and shows that each node's czxid
// (the fencing token) grows with the queue, and that a session's nodes vanish
// when it ends.
func TestDemo(t *testing.T) {
	cl := zktest.Standalone(t)
	t.Logf("ZooKeeper 3.8 running at %s", cl.ConnectString())

	quiet := zk.WithLogger(log.New(io.Discard, "", 0))
	var sessions []*zk.Conn
	for i := 0; i < 3; i++ {
		c, _, err := zk.Connect(cl.Addrs(), 4*time.Second, quiet, zk.WithLogInfo(false))
		require.NoError(t, err)
		defer c.Close()
		sessions = append(sessions, c)
	}
	_, err := sessions[0].Create("/demo", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	for i, c := range sessions {
		p, err := c.Create("/demo/lock-", []byte{byte('A' + i)}, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		_, st, err := c.Get(p)
		require.NoError(t, err)
		t.Logf("session %c queued as %s, fencing token (czxid) %d", 'A'+i, p, st.Czxid)
	}
	show := func() []string {
		kids, _, err := sessions[2].Children("/demo")
		require.NoError(t, err)
		sort.Strings(kids)
		t.Logf("queue: %v (the first one holds the lock)", kids)
		return kids
	}
	require.Len(t, show(), 3)
	sessions[0].Close()
	t.Log("session A ended: its node is gone and B now holds the lock")
	require.Eventually(t, func() bool {
		kids, _, err := sessions[2].Children("/demo")
		return err == nil && len(kids) == 2
	}, 10*time.Second, 20*time.Millisecond)
	show()
}
