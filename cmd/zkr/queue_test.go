package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// zkr ls's read-write lock roles are Curator's rule, whatever the
// sessions: two RWLocks on one client contend as two processes do. Only a
// downgrade (a read node of the write node's session and sequence number)
// holds beside its write node. (Before: any node behind a holding node of
// its own session was shown holding.)
func TestRWLockRolesFollowCuratorsRuleNotTheSession(t *testing.T) {
	w := func(seq string, owner int64) nodeInfo { return nodeInfo{name: "_c_a-" + markWrite + seq, owner: owner} }
	r := func(seq string, owner int64) nodeInfo { return nodeInfo{name: "_c_b-" + markRead + seq, owner: owner} }
	roles := func(nodes ...nodeInfo) []string {
		var out []string
		for _, e := range rwlockRoles(nodes) {
			out = append(out, e.Role)
		}
		return out
	}
	assert.Equal(t, []string{roleHolds, roleWaits}, roles(w("0000000001", 7), r("0000000002", 7)),
		"a reader of the same session behind a writer")
	assert.Equal(t, []string{roleHolds, roleWaits}, roles(r("0000000001", 7), w("0000000002", 7)),
		"a writer of the same session behind a reader")
	assert.Equal(t, []string{roleHolds, roleHolds, roleWaits}, roles(w("0000000003", 7), r("0000000003", 7), w("0000000004", 8)),
		"a downgrade: the read node holds beside its write node")
	assert.Equal(t, []string{roleHolds, roleHolds}, roles(r("0000000003", 7), w("0000000003", 7)),
		"a downgrade whose read node sorts first")
	assert.Equal(t, []string{roleHolds, roleHolds, roleWaits}, roles(r("0000000001", 7), r("0000000002", 8), w("0000000003", 7)))
}
