package chaos

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Lines of a run in which server 3 truncated its log to 0x900000047 and
// then loaded snapshot 0x900000048 (make chaos, 2026-11-27): every digest
// check on it failed from then on.
const truncPastSnapshotLog = `09:59:37.274 [QuorumPeer[myid=3](plain=127.0.0.1:36963)(secure=disabled)] INFO org.apache.zookeeper.server.quorum.QuorumPeer - Peer state changed: following - synchronization - trunc
09:59:37.275 [QuorumPeer[myid=3](plain=127.0.0.1:36963)(secure=disabled)] WARN org.apache.zookeeper.server.quorum.Learner - Truncating log to get in sync with the leader 0x900000047
09:59:37.278 [QuorumPeer[myid=3](plain=127.0.0.1:36963)(secure=disabled)] INFO org.apache.zookeeper.server.persistence.FileSnap - Reading snapshot /tmp/TestChaos73336863/001/server3/data/version-2/snapshot.900000048
09:59:37.887 [CommitProcessor:3] WARN org.apache.zookeeper.server.DataTree - Message:Digests are not matching. Value is Zxid. Value:42949672961
`

func TestTruncatedPastSnapshotIsFound(t *testing.T) {
	got, ok := truncatedPastSnapshot(truncPastSnapshotLog)
	assert.True(t, ok)
	assert.Equal(t, truncation{to: 0x900000047, snapshot: 0x900000048, at: "09:59:37.275"}, got)
	assert.Contains(t, got.String(), "truncated its log to 0x900000047, then loaded snapshot 0x900000048")
}

// A truncation followed by an older snapshot (the usual case) is none,
// and so is a snapshot read with no truncation before it.
func TestTruncatedToOrBeforeItsSnapshotIsNotTheBug(t *testing.T) {
	older := `09:59:37.275 [QuorumPeer[myid=3]] WARN org.apache.zookeeper.server.quorum.Learner - Truncating log to get in sync with the leader 0x900000047
09:59:37.278 [QuorumPeer[myid=3]] INFO org.apache.zookeeper.server.persistence.FileSnap - Reading snapshot /tmp/x/version-2/snapshot.900000040
`
	_, found := truncatedPastSnapshot(older)
	assert.False(t, found)
	noTrunc := `09:59:37.278 [main] INFO org.apache.zookeeper.server.persistence.FileSnap - Reading snapshot /tmp/x/version-2/snapshot.900000048
`
	_, found = truncatedPastSnapshot(noTrunc)
	assert.False(t, found)
	_, found = truncatedPastSnapshot("")
	assert.False(t, found)
}

// The divergence is ZooKeeper's own only when the servers' data shows it:
// server 3's log says it truncated to 0x900000047 and loaded snapshot
// 0x900000048; the others' logs go from 0x900000047 to the next epoch.
func TestServerBugNeedsTheReplicasDataBesideTheLog(t *testing.T) {
	const epoch9, epoch10 = int64(9) << 32, int64(10) << 32
	replicas := func(majorityHad bool) func() []*replica {
		bug := t.TempDir()
		writeLog(t, bug, false, false, epoch9|0x46, epoch9|0x47)
		writeLog(t, bug, true, false, epoch10|1)
		writeSnapshot(t, bug, epoch9|0x48)
		rs := []*replica{}
		for id := 1; id <= 2; id++ {
			d := t.TempDir()
			if majorityHad {
				writeLog(t, d, true, false, epoch9|0x46, epoch9|0x47, epoch9|0x48, epoch10|1)
			} else {
				writeLog(t, d, true, false, epoch9|0x46, epoch9|0x47, epoch10|1)
			}
			rs = append(rs, readReplica(id, d))
		}
		rs = append(rs, readReplica(3, bug))
		return func() []*replica { return rs }
	}
	logs := map[int]string{1: "", 2: "", 3: truncPastSnapshotLog}

	bug, unproven := serverBug(logs, replicas(false))
	assert.Empty(t, unproven)
	assert.Contains(t, bug, "server3: truncated its log to 0x900000047, then loaded snapshot 0x900000048")
	assert.Contains(t, bug, "zxid 0x900000048: server3 had it (snapshot.900000048 is named after it); server1 never had it (its log goes from 0x900000047 to 0xa00000001")

	bug, unproven = serverBug(logs, replicas(true))
	assert.Empty(t, bug, "the majority had what the snapshot holds: no proof the server diverged by the bug")
	assert.Contains(t, unproven, "the servers' data does not show that the quorum never had it")

	bug, unproven = serverBug(map[int]string{1: "", 2: "", 3: ""}, replicas(false))
	assert.Empty(t, bug, "no truncation in any log")
	assert.Empty(t, unproven)
}
