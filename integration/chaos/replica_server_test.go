package chaos

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/zkserver"
)

// The evidence read from real servers' files: a leader cut off from its
// followers logs a create it can never commit (its followers never see the
// proposal); the majority elects a new leader and goes on in a new epoch.
// The old leader's log has the create; the others' logs go from the last
// committed transaction straight to the new epoch's, so the quorum
// provably never had it. A transaction committed before the partition is
// had by all. ZooKeeper's own tools read the same files the same way.
func TestReplicaDataShowsAProposalTheQuorumNeverCommitted(t *testing.T) {
	cl := zktest.Ensemble(t, 3, EnsembleOptions()...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all, err := framework.Dial(ctx, cl.DirectAddrs(), framework.WithSessionTimeout(10*time.Second))
	require.NoError(t, err)
	defer all.Close()
	_, err = all.Create(ctx, "/replica", nil)
	require.NoError(t, err)
	_, st, err := all.Get(ctx, "/replica")
	require.NoError(t, err)
	committed := st.Czxid

	old := cl.Leader(30 * time.Second)
	onOld, _, err := zk.Connect([]string{old.DirectAddr()}, 10*time.Second, zk.WithLogger(quietLog{}))
	require.NoError(t, err)
	defer onOld.Close()
	require.Eventually(t, func() bool { return onOld.State() == zk.StateHasSession }, 30*time.Second, 10*time.Millisecond)

	cl.Partition(old.ID)
	defer cl.HealPartition()
	go func() { _, _ = onOld.Create("/replica/phantom", nil, 0, zk.WorldACL(zk.PermAll)) }()
	var phantom int64
	require.Eventually(t, func() bool {
		phantom = loggedCreate(readReplica(old.ID, old.SnapshotDir()), "/replica/phantom")
		return phantom != 0
	}, 10*time.Second, 20*time.Millisecond, "the cut-off leader never logged the create")
	onOld.Close()

	// The majority elects a leader of its own and commits in a new epoch.
	var majority []*zktest.Server
	var addrs []string
	for _, s := range cl.Servers() {
		if s.ID != old.ID {
			majority = append(majority, s)
			addrs = append(addrs, s.DirectAddr())
		}
	}
	require.Eventually(t, func() bool {
		return slices.ContainsFunc(majority, func(s *zktest.Server) bool { return s.Mode() == "leader" })
	}, 30*time.Second, 50*time.Millisecond, "the majority elected no leader")
	onMajority, err := framework.Dial(ctx, addrs, framework.WithSessionTimeout(10*time.Second))
	require.NoError(t, err)
	defer onMajority.Close()
	_, err = onMajority.Create(ctx, "/replica/after", nil)
	require.NoError(t, err)
	_, st, err = onMajority.Get(ctx, "/replica/after")
	require.NoError(t, err)
	require.Greater(t, st.Czxid>>32, phantom>>32, "a new epoch")

	var replicas []*replica
	for _, s := range cl.Servers() {
		replicas = append(replicas, readReplica(s.ID, s.SnapshotDir()))
	}
	p := proveZxid(replicas, phantom)
	t.Log(p)
	assert.True(t, p.neverCommitted(), "%s", p)
	assert.Len(t, p.had, 1)
	assert.Contains(t, p.had[0], fmt.Sprintf("server%d had it (create /replica/phantom in log.", old.ID))
	assert.Len(t, p.never, 2)
	assert.False(t, proveZxid(replicas, committed).neverCommitted())
	assert.Len(t, proveZxid(replicas, committed).had, 3)

	// ZooKeeper's own tools read every log and snapshot as this file does.
	install, err := zkserver.Locate()
	require.NoError(t, err)
	txns, nodes := 0, 0
	for _, rp := range replicas {
		dir := cl.Server(rp.server).SnapshotDir()
		for _, l := range rp.logs {
			assert.Equal(t, toolLogZxids(t, install, filepath.Join(dir, l.name)), zxidsOf(l), "%s of server%d", l.name, rp.server)
			txns += len(l.txns)
		}
		for _, s := range rp.snaps {
			assert.Equal(t, toolSnapshotNodes(t, install, filepath.Join(dir, s.name)), s.nodes, "%s of server%d", s.name, rp.server)
			nodes += len(s.nodes)
		}
	}
	assert.Positive(t, txns)
	assert.Positive(t, nodes, "the new leader's snapshot holds /replica")
}

// loggedCreate is the zxid of a create of path in rp's logs, or 0.
func loggedCreate(rp *replica, path string) int64 {
	for _, l := range rp.logs {
		for _, t := range l.txns {
			if t.path == path {
				return t.zxid
			}
		}
	}
	return 0
}

func zxidsOf(l txnLog) []int64 {
	out := []int64{}
	for _, t := range l.txns {
		out = append(out, t.zxid)
	}
	return out
}

var toolZxid = regexp.MustCompile(` zxid 0x([0-9a-f]+) `)

// toolLogZxids lists a log's zxids as ZooKeeper's TxnLogToolkit prints them.
func toolLogZxids(t *testing.T, in *zkserver.Install, file string) []int64 {
	t.Helper()
	out, err := exec.Command(in.Java, "-cp", in.Classpath, "org.apache.zookeeper.server.persistence.TxnLogToolkit", file).Output()
	require.NoError(t, err, "TxnLogToolkit %s", file)
	zxids := []int64{}
	for _, m := range toolZxid.FindAllStringSubmatch(string(out), -1) {
		z, err := strconv.ParseInt(m[1], 16, 64)
		require.NoError(t, err)
		zxids = append(zxids, z)
	}
	return zxids
}

// toolSnapshotNodes lists a snapshot's nodes by czxid as ZooKeeper's
// SnapshotFormatter prints them (the root and /zookeeper, czxid 0, left
// out).
func toolSnapshotNodes(t *testing.T, in *zkserver.Install, file string) map[int64]string {
	t.Helper()
	out, err := exec.Command(in.Java, "-cp", in.Classpath, "org.apache.zookeeper.server.SnapshotFormatter", file).Output()
	require.NoError(t, err, "SnapshotFormatter %s", file)
	nodes := map[int64]string{}
	lines := strings.Split(string(out), "\n")
	for i := 0; i+1 < len(lines); i++ {
		if lines[i] != "----" || !strings.HasPrefix(lines[i+1], "/") || i+2 >= len(lines) {
			continue
		}
		c, ok := strings.CutPrefix(lines[i+2], "  cZxid = 0x")
		if !ok {
			continue
		}
		z, err := strconv.ParseInt(c, 16, 64)
		require.NoError(t, err)
		if z != 0 {
			nodes[z] = lines[i+1]
		}
	}
	return nodes
}

// quietLog silences go-zookeeper.
type quietLog struct{}

func (quietLog) Printf(string, ...any) {}
