package chaos

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A server that replays its log over a fuzzy snapshot at start-up applies
// again transactions the snapshot holds, and reports digest mismatches on
// its main thread (seen in a rolling restart); a mismatch found while it
// follows is a replica that differs from the leader's.
func TestDivergenceLeavesOutTheStartUpReplay(t *testing.T) {
	replay := `06:42:05.813 [main] WARN org.apache.zookeeper.server.DataTree - Message:Digests are not matching. Value is Zxid. Value:38654705665
06:42:05.816 [main] ERROR org.apache.zookeeper.server.DataTree - First digest mismatch on txn: 216173044643659776,140,38654705665,1795761720694,1
, '/chaos/rwlock/_c_2014e6e1-8407-43f6-b597-ac109b66d136-__READ__0000000083,#6336,v{s{31,s{'world,'anyone}}},T,84
, expected digest is 2,1749869134067
, actual digest is 1750845448972, 
06:42:05.821 [main] WARN org.apache.zookeeper.server.DataTree - [10 times] Message: Digests are not matching. Value is Zxid. Last value:38654705675`
	n, _ := divergence(replay)
	assert.Zero(t, n)

	following := replay + "\n" + `06:43:01.002 [CommitProcessor:3] ERROR org.apache.zookeeper.server.DataTree - First digest mismatch on txn: 216173044643659776,140,38654705700,1795761720694,1`
	n, first := divergence(following)
	assert.Equal(t, 1, n)
	assert.Contains(t, first, "[CommitProcessor:3]")
}
