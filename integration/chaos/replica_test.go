package chaos

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// juteOut writes ZooKeeper's binary serialisation, for data directories
// made up by the tests.
type juteOut struct{ bytes.Buffer }

func (o *juteOut) int(v int32)  { _ = binary.Write(o, binary.BigEndian, v) }
func (o *juteOut) long(v int64) { _ = binary.Write(o, binary.BigEndian, v) }
func (o *juteOut) string(s string) {
	o.int(int32(len(s)))
	o.WriteString(s)
}

// createTxn is a log entry's bytes: a create of path by zxid z.
func createTxn(z int64, path string) []byte {
	var o juteOut
	o.long(0x1234) // clientId
	o.int(1)       // cxid
	o.long(z)
	o.long(0) // time
	o.int(opCreate)
	o.string(path)
	o.int(0) // data
	o.int(0) // no ACLs
	o.WriteByte(1)
	o.int(0) // parentCVersion
	return o.Bytes()
}

// writeLog writes dir/log.<first> with a create per zxid; padded says
// whether it ends with the preallocated zeros, and partial appends half an
// entry (a file cut mid-write).
func writeLog(t *testing.T, dir string, padded, partial bool, zxids ...int64) {
	t.Helper()
	var o juteOut
	o.int(txnLogMagic)
	o.int(2)
	o.long(0)
	for _, z := range zxids {
		e := createTxn(z, fmt.Sprintf("/n-%x", z))
		o.long(int64(adler32.Checksum(e)))
		o.int(int32(len(e)))
		o.Write(e)
		o.WriteByte('B')
	}
	if partial {
		e := createTxn(zxids[len(zxids)-1]+1, "/cut")
		o.long(int64(adler32.Checksum(e)))
		o.int(int32(len(e)))
		o.Write(e[:len(e)/2])
	}
	if padded {
		o.Write(make([]byte, 64))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("log.%x", zxids[0])), o.Bytes(), 0o644))
}

// writeSnapshot writes dir/snapshot.<zxid> holding a node per czxid.
func writeSnapshot(t *testing.T, dir string, zxid int64, czxids ...int64) {
	t.Helper()
	var o juteOut
	o.int(snapshotMagic)
	o.int(2)
	o.long(0)
	o.int(1) // one session
	o.long(0x1234)
	o.int(2000)
	o.int(1) // one ACL list in the cache
	o.long(1)
	o.int(1)
	o.int(31)
	o.string("world")
	o.string("anyone")
	node := func(path string, czxid int64) {
		o.string(path)
		o.int(2) // data
		o.WriteString("c1")
		o.long(1)     // acl
		o.long(czxid) // czxid
		o.long(czxid) // mzxid
		o.long(0)
		o.long(0)
		o.int(0)
		o.int(0)
		o.int(0)
		o.long(0x1234) // ephemeralOwner
		o.long(czxid)  // pzxid
	}
	node("", 0)
	for _, c := range czxids {
		node(fmt.Sprintf("/n-%x", c), c)
	}
	o.string("/")
	require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("snapshot.%x", zxid)), o.Bytes(), 0o644))
}

const (
	epoch14 = int64(0x14) << 32
	epoch15 = int64(0x15) << 32
)

func TestReplicaHadATransactionItLoggedOrSnapshotted(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, true, false, epoch14|1, epoch14|2)
	writeSnapshot(t, dir, epoch14|5, epoch14|4)
	rp := readReplica(3, dir)

	v, why := rp.verdict(epoch14 | 2)
	assert.Equal(t, haveHad, v)
	assert.Contains(t, why, "server3 had it (create /n-1400000002 in log.1400000001)")

	v, why = rp.verdict(epoch14 | 4)
	assert.Equal(t, haveHad, v)
	assert.Contains(t, why, "node /n-1400000004, created by it, in snapshot.1400000005")

	v, why = rp.verdict(epoch14 | 5)
	assert.Equal(t, haveHad, v, "a snapshot is named after the last transaction applied")
	assert.Contains(t, why, "snapshot.1400000005 is named after it")
}

// The majority's side of the TRUNC case: the log goes from 0x140000000b
// to the new epoch's first transaction.
func TestReplicaNeverHadWhatItsLogSkips(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, true, false, epoch14|0xa, epoch14|0xb, epoch15|1, epoch15|2)
	writeSnapshot(t, dir, epoch14|0xb) // the new leader's snapshot as it starts to lead
	rp := readReplica(1, dir)
	v, why := rp.verdict(epoch14 | 0xd)
	assert.Equal(t, haveNever, v)
	assert.Equal(t, "server1 never had it (its log goes from 0x140000000b to 0x1500000001 in log.140000000a, and no snapshot of it is named in between)", why)

	// Across two files, the first read to its end.
	dir2 := t.TempDir()
	writeLog(t, dir2, false, false, epoch14|0xa, epoch14|0xb) // truncated: ends right after an entry
	writeLog(t, dir2, true, false, epoch15|1)
	v, why = readReplica(2, dir2).verdict(epoch14 | 0xd)
	assert.Equal(t, haveNever, v)
	assert.Contains(t, why, "in log.140000000a and log.1500000001")
}

// Nothing is inferred: a gap a snapshot may have filled, a file that ends
// mid-entry, or a log that does not reach past the zxid prove nothing.
func TestReplicaUnknownWithoutProof(t *testing.T) {
	// The TRUNC bug's own server: truncated to 0x140000000b, then it loaded
	// snapshot 0x140000000d. It had the node, from the snapshot.
	dir := t.TempDir()
	writeLog(t, dir, false, false, epoch14|0xa, epoch14|0xb)
	writeLog(t, dir, true, false, epoch15|1)
	writeSnapshot(t, dir, epoch14|0xd)
	v, why := readReplica(3, dir).verdict(epoch14 | 0xc)
	assert.Equal(t, haveUnknown, v)
	assert.Contains(t, why, "snapshot.140000000d may have brought it in")

	cut := t.TempDir()
	writeLog(t, cut, false, true, epoch14|0xa, epoch14|0xb)
	writeLog(t, cut, true, false, epoch15|1)
	v, _ = readReplica(1, cut).verdict(epoch14 | 0xd)
	assert.Equal(t, haveUnknown, v, "what the cut entry held is unknown")

	behind := t.TempDir()
	writeLog(t, behind, true, false, epoch14|0xa)
	v, _ = readReplica(2, behind).verdict(epoch14 | 0xd)
	assert.Equal(t, haveUnknown, v)

	v, why = readReplica(2, filepath.Join(behind, "missing")).verdict(epoch14 | 0xd)
	assert.Equal(t, haveUnknown, v)
	assert.Contains(t, why, "its data directory")
}

func TestZxidNeverCommittedNeedsOneServerWithItAndAMajorityWithout(t *testing.T) {
	had, never := t.TempDir(), []string{t.TempDir(), t.TempDir()}
	writeLog(t, had, false, false, epoch14|0xa, epoch14|0xb)
	writeLog(t, had, true, false, epoch15|1)
	writeSnapshot(t, had, epoch14|0xd, epoch14|0xd)
	for _, d := range never {
		writeLog(t, d, true, false, epoch14|0xa, epoch14|0xb, epoch15|1)
	}
	replicas := []*replica{readReplica(1, never[0]), readReplica(2, never[1]), readReplica(3, had)}
	p := proveZxid(replicas, epoch14|0xd)
	assert.True(t, p.neverCommitted())
	assert.Contains(t, p.String(), "zxid 0x140000000d: server3 had it (node /n-140000000d, created by it, in snapshot.140000000d); server1 never had it")

	// A zxid every server had.
	assert.False(t, proveZxid(replicas, epoch14|0xa).neverCommitted())
	// One of three proven without it is no majority.
	behind := t.TempDir()
	writeLog(t, behind, true, false, epoch14|0xa)
	assert.False(t, proveZxid([]*replica{readReplica(1, never[0]), readReplica(2, behind), readReplica(3, had)}, epoch14|0xd).neverCommitted())
	// A token no server had (a made-up one) is nobody's transaction.
	assert.False(t, proveZxid([]*replica{readReplica(1, never[0]), readReplica(2, never[1]), readReplica(3, behind)}, epoch14|0xd).neverCommitted())
}
