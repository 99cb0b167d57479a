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
	got := truncatedPastSnapshot(truncPastSnapshotLog)
	assert.Contains(t, got, "truncated its log to 0x900000047, then loaded snapshot 0x900000048")
	assert.Contains(t, got, "09:59:37.275")
}

// A truncation followed by an older snapshot (the usual case) is none,
// and so is a snapshot read with no truncation before it.
func TestTruncatedToOrBeforeItsSnapshotIsNotTheBug(t *testing.T) {
	older := `09:59:37.275 [QuorumPeer[myid=3]] WARN org.apache.zookeeper.server.quorum.Learner - Truncating log to get in sync with the leader 0x900000047
09:59:37.278 [QuorumPeer[myid=3]] INFO org.apache.zookeeper.server.persistence.FileSnap - Reading snapshot /tmp/x/version-2/snapshot.900000040
`
	assert.Empty(t, truncatedPastSnapshot(older))
	noTrunc := `09:59:37.278 [main] INFO org.apache.zookeeper.server.persistence.FileSnap - Reading snapshot /tmp/x/version-2/snapshot.900000048
`
	assert.Empty(t, truncatedPastSnapshot(noTrunc))
	assert.Empty(t, truncatedPastSnapshot(""))
}
