package chaos

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// What a server's own data directory says about a transaction: its
// transaction logs and snapshots, read in ZooKeeper 3.8's formats (jute,
// big-endian: FileTxnLog and FileSnap). The suite uses them to tell a
// violation of ZooKeeper's own from the recipes': a hold on a node created
// by a transaction the quorum never committed is ZooKeeper serving what it
// never agreed on, and only the replicas' data can show that.
//
// A server had zxid Z when one of its logs holds transaction Z, one of its
// snapshots holds a node created by Z, or a snapshot of it is named Z (a
// snapshot is named after the last transaction applied before it). It
// provably never had Z when its log goes from a transaction before Z
// straight to one after it, N, and no snapshot of it is named from Z up to
// N: outside a snapshot sync a server logs every transaction it applies,
// and a snapshot sync (or a snapshot loaded after a truncation) leaves a
// snapshot named at or after what it brought in. Nothing else is inferred:
// a server whose files do not show either is unknown. The data directories
// are never purged in the suite, so a server's files are its whole history
// since the ensemble began.

const (
	txnLogMagic   = 0x5a4b4c47 // "ZKLG"
	snapshotMagic = 0x5a4b534e // "ZKSN"
)

// txnRecord is one transaction of a server's log.
type txnRecord struct {
	zxid int64
	typ  int32
	// path is the node a create made (the first create of a multi), or "".
	path string
}

// txnLog is one log file, log.<first zxid in hex>.
type txnLog struct {
	name string
	txns []txnRecord
	// clean: read to its end, the preallocated zeros or the end of the file
	// right after a whole entry; the next file goes on where it stops.
	clean bool
}

// snapshotFile is one snapshot, snapshot.<zxid in hex>.
type snapshotFile struct {
	name  string
	zxid  int64
	nodes map[int64]string // czxid -> path; nil if unreadable
}

// replica is one server's data directory.
type replica struct {
	server int
	logs   []txnLog // by first zxid
	snaps  []snapshotFile
	err    error // the directory could not be listed
}

// readReplica reads every transaction log and snapshot of a server's data
// directory (its version-2 directory). A file it cannot read whole is kept
// for what it could read.
func readReplica(server int, dir string) *replica {
	rp := &replica{server: server}
	ents, err := os.ReadDir(dir)
	if err != nil {
		rp.err = err
		return rp
	}
	for _, e := range ents {
		switch name := e.Name(); {
		case strings.HasPrefix(name, "log."):
			if _, ok := zxidOfName(name, "log."); !ok {
				continue
			}
			l, _ := readTxnLog(filepath.Join(dir, name))
			l.name = name
			rp.logs = append(rp.logs, l)
		case strings.HasPrefix(name, "snapshot."):
			z, ok := zxidOfName(name, "snapshot.")
			if !ok {
				continue
			}
			s := snapshotFile{name: name, zxid: z}
			if nodes, err := readSnapshotNodes(filepath.Join(dir, name)); err == nil {
				s.nodes = nodes
			}
			rp.snaps = append(rp.snaps, s)
		}
	}
	sort.Slice(rp.logs, func(i, j int) bool {
		a, _ := zxidOfName(rp.logs[i].name, "log.")
		b, _ := zxidOfName(rp.logs[j].name, "log.")
		return a < b
	})
	sort.Slice(rp.snaps, func(i, j int) bool { return rp.snaps[i].zxid < rp.snaps[j].zxid })
	return rp
}

// zxidOfName parses the hex zxid a data file is named after; a compressed
// snapshot's suffix (.gz, .snappy) is not one.
func zxidOfName(name, prefix string) (int64, bool) {
	z, err := strconv.ParseUint(strings.TrimPrefix(name, prefix), 16, 63)
	return int64(z), err == nil
}

// haveVerdict is what one server's files say about one zxid.
type haveVerdict int

const (
	haveUnknown haveVerdict = iota
	haveHad
	haveNever
)

// verdict says whether the server had zxid z, and the evidence.
func (rp *replica) verdict(z int64) (haveVerdict, string) {
	name := fmt.Sprintf("server%d", rp.server)
	if rp.err != nil {
		return haveUnknown, fmt.Sprintf("%s: its data directory: %v", name, rp.err)
	}
	for _, l := range rp.logs {
		for _, t := range l.txns {
			if t.zxid == z {
				what := "transaction"
				if t.path != "" {
					what = "create " + t.path
				}
				return haveHad, fmt.Sprintf("%s had it (%s in %s)", name, what, l.name)
			}
		}
	}
	for _, s := range rp.snaps {
		if p, ok := s.nodes[z]; ok {
			return haveHad, fmt.Sprintf("%s had it (node %s, created by it, in %s)", name, p, s.name)
		}
		if s.zxid == z {
			return haveHad, fmt.Sprintf("%s had it (%s is named after it)", name, s.name)
		}
	}
	// The log as one stream: a file's successor goes on where it stops only
	// if it was read to its end.
	var prev *txnRecord
	var prevFile string
	for _, l := range rp.logs {
		for i := range l.txns {
			t := &l.txns[i]
			if prev != nil && prev.zxid < z && z < t.zxid {
				for _, s := range rp.snaps {
					if s.zxid >= z && s.zxid < t.zxid {
						return haveUnknown, fmt.Sprintf("%s: its log goes from 0x%x to 0x%x, but %s may have brought it in", name, prev.zxid, t.zxid, s.name)
					}
				}
				where := l.name
				if prevFile != l.name {
					where = prevFile + " and " + l.name
				}
				return haveNever, fmt.Sprintf("%s never had it (its log goes from 0x%x to 0x%x in %s, and no snapshot of it is named in between)", name, prev.zxid, t.zxid, where)
			}
			prev, prevFile = t, l.name
		}
		if !l.clean {
			prev = nil
		}
	}
	return haveUnknown, fmt.Sprintf("%s: its files do not show whether it had it", name)
}

// zxidProof is what every server's files say about one zxid.
type zxidProof struct {
	zxid    int64
	servers int
	had     []string
	never   []string
	unknown []string
}

// proveZxid asks every replica about z.
func proveZxid(replicas []*replica, z int64) zxidProof {
	p := zxidProof{zxid: z, servers: len(replicas)}
	for _, rp := range replicas {
		switch v, why := rp.verdict(z); v {
		case haveHad:
			p.had = append(p.had, why)
		case haveNever:
			p.never = append(p.never, why)
		default:
			p.unknown = append(p.unknown, why)
		}
	}
	return p
}

// neverCommitted: a server had the transaction, and a majority of the
// ensemble provably never did, so the quorum never committed it (Zab
// keeps every transaction a quorum logged).
func (p zxidProof) neverCommitted() bool {
	return len(p.had) > 0 && 2*len(p.never) > p.servers
}

func (p zxidProof) String() string {
	parts := append(append(append([]string(nil), p.had...), p.never...), p.unknown...)
	return fmt.Sprintf("zxid 0x%x: %s", p.zxid, strings.Join(parts, "; "))
}

// jute reads ZooKeeper's binary serialisation.
type jute struct {
	r   io.Reader
	buf [8]byte
	err error
}

func (j *jute) read(n int) []byte {
	if j.err != nil {
		return j.buf[:n]
	}
	if _, err := io.ReadFull(j.r, j.buf[:n]); err != nil {
		j.err = err
	}
	return j.buf[:n]
}

func (j *jute) int() int32  { return int32(binary.BigEndian.Uint32(j.read(4))) }
func (j *jute) long() int64 { return int64(binary.BigEndian.Uint64(j.read(8))) }
func (j *jute) byte() byte  { return j.read(1)[0] }

// maxJuteBuffer bounds a length read from a file, so a damaged one fails
// instead of allocating gigabytes (jute.maxbuffer is 1 MiB by default).
const maxJuteBuffer = 64 << 20

func (j *jute) buffer() []byte {
	n := j.int()
	if j.err != nil || n < 0 {
		return nil
	}
	if n > maxJuteBuffer {
		j.err = fmt.Errorf("jute: a buffer of %d bytes", n)
		return nil
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(j.r, b); err != nil {
		j.err = err
	}
	return b
}

func (j *jute) string() string { return string(j.buffer()) }

// acls skips a vector<ACL>.
func (j *jute) acls() {
	n := j.int()
	for i := int32(0); i < n && j.err == nil; i++ {
		j.int()    // perms
		j.string() // scheme
		j.string() // id
	}
}

// readTxnLog reads a transaction log up to its preallocated zeros. It
// stops at the first entry it cannot read whole or whose checksum fails,
// and says so (clean false, with the error).
func readTxnLog(path string) (txnLog, error) {
	f, err := os.Open(path)
	if err != nil {
		return txnLog{}, err
	}
	defer f.Close()
	j := &jute{r: bufio.NewReaderSize(f, 64<<10)}
	if magic := j.int(); j.err != nil || magic != txnLogMagic {
		return txnLog{}, fmt.Errorf("%s: not a transaction log", path)
	}
	j.int()  // version
	j.long() // dbid
	var l txnLog
	for {
		crc := j.long()
		if errors.Is(j.err, io.EOF) {
			l.clean = true // the file ends right after an entry (a truncated log)
			return l, nil
		}
		entry := j.buffer()
		if j.err != nil {
			return l, fmt.Errorf("%s: %w", path, j.err)
		}
		if len(entry) == 0 {
			l.clean = true // the preallocated zeros
			return l, nil
		}
		if j.byte() != 'B' || j.err != nil {
			return l, fmt.Errorf("%s: a partial entry after 0x%x", path, lastZxid(l))
		}
		if uint32(crc) != adler32.Checksum(entry) || crc>>32 != 0 {
			return l, fmt.Errorf("%s: a checksum that fails after 0x%x", path, lastZxid(l))
		}
		t, err := parseTxn(entry)
		if err != nil {
			return l, fmt.Errorf("%s: %w", path, err)
		}
		l.txns = append(l.txns, t)
	}
}

func lastZxid(l txnLog) int64 {
	if len(l.txns) == 0 {
		return 0
	}
	return l.txns[len(l.txns)-1].zxid
}

// The transaction types whose record begins with the path of a node made.
const (
	opCreate          = 1
	opMulti           = 14
	opCreate2         = 15
	opCreateContainer = 19
	opCreateTTL       = 21
)

func creates(typ int32) bool {
	return typ == opCreate || typ == opCreate2 || typ == opCreateContainer || typ == opCreateTTL
}

// parseTxn reads a log entry: TxnHeader, then the record.
func parseTxn(entry []byte) (txnRecord, error) {
	j := &jute{r: bytes.NewReader(entry)}
	j.long() // clientId
	j.int()  // cxid
	t := txnRecord{zxid: j.long()}
	j.long() // time
	t.typ = j.int()
	if j.err != nil {
		return t, fmt.Errorf("a transaction header: %w", j.err)
	}
	switch {
	case creates(t.typ):
		t.path = j.string()
	case t.typ == opMulti:
		n := j.int()
		for i := int32(0); i < n && j.err == nil && t.path == ""; i++ {
			typ := j.int()
			data := j.buffer()
			if creates(typ) && len(data) >= 4 {
				sub := &jute{r: bytes.NewReader(data)}
				t.path = sub.string()
			}
		}
	}
	return t, nil
}

// readSnapshotNodes reads an uncompressed snapshot's nodes: their paths by
// czxid.
func readSnapshotNodes(path string) (map[int64]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	j := &jute{r: bufio.NewReaderSize(f, 64<<10)}
	if magic := j.int(); j.err != nil || magic != snapshotMagic {
		return nil, fmt.Errorf("%s: not an uncompressed snapshot", path)
	}
	j.int()  // version
	j.long() // dbid
	for n := j.int(); n > 0 && j.err == nil; n-- {
		j.long() // session id
		j.int()  // timeout
	}
	for n := j.int(); n > 0 && j.err == nil; n-- {
		j.long() // ACL cache key
		j.acls()
	}
	nodes := map[int64]string{}
	for j.err == nil {
		p := j.string()
		if p == "/" { // the end of the tree
			break
		}
		j.buffer() // data
		j.long()   // acl
		czxid := j.long()
		for range 3 {
			j.long() // mzxid, ctime, mtime
		}
		for range 3 {
			j.int() // version, cversion, aversion
		}
		j.long() // ephemeralOwner
		j.long() // pzxid
		// The root and /zookeeper were never created by a transaction.
		if czxid != 0 {
			nodes[czxid] = p
		}
	}
	if j.err != nil {
		return nil, fmt.Errorf("%s: %w", path, j.err)
	}
	return nodes, nil
}
