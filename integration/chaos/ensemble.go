package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// The ensemble the suite runs against, pinned here because the checks
// depend on it: a server cut off from the quorum finds out after
// syncLimit ticks without the leader (a follower) or without a quorum of
// acks (the leader), and until then it still answers its clients' pings.
const (
	tickTime  = 200 * time.Millisecond
	syncLimit = 5
	// quorumLossAfter is how long a server cut off from the quorum may go
	// on serving its clients: syncLimit ticks.
	quorumLossAfter = syncLimit * tickTime
)

// EnsembleOptions are the zktest options of the suite's ensemble: the tick
// and sync limit the checks count with, proxies on every quorum and
// election link (the partition and lag faults), leader elections that
// retry at least every second once a partition heals (ZooKeeper's own
// back-off grows to a minute), and a snapshot every few hundred
// transactions, so that a server killed and restarted reads a snapshot and
// the log after it, not one log from the start.
func EnsembleOptions() []zktest.Option {
	return []zktest.Option{
		zktest.WithTickTime(tickTime),
		zktest.WithSyncLimit(syncLimit),
		zktest.WithPeerProxies(),
		zktest.WithSystemProperty("zookeeper.fastleader.maxNotificationInterval", "1000"),
		zktest.WithSystemProperty("zookeeper.snapCount", "1000"),
	}
}

// KindMinority: when a partition began, the contender was connected to a
// server on the minority side (Detail: the fault and that server, and
// "confined" if its own link to the majority was cut too). The checker
// holds its hold, if it had one then, to the partition's rules.
const KindMinority Kind = "minority"

// KindSteer: the nemesis moved a contender that held nothing to a server
// (Detail), cutting its link, so that a fault aimed at that server has a
// client on it.
const KindSteer Kind = "steer"

// linked returns the live contenders whose links go to server id now,
// holders first.
func (r *run) linked(id int) []*proc {
	r.mu.Lock()
	live := slices.Clone(r.live)
	holding := make(map[string]bool, len(r.holding))
	for c := range r.holding {
		holding[c] = true
	}
	r.mu.Unlock()
	var holders, others []*proc
	for _, p := range live {
		if !slices.Contains(r.proxies[p.slot].Servers(), id) {
			continue
		}
		if holding[p.id] {
			holders = append(holders, p)
		} else {
			others = append(others, p)
		}
	}
	return append(holders, others...)
}

// isHolding says whether p holds now, as far as the nemesis knows.
func (r *run) isHolding(p *proc) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.holding[p.id]
	return ok
}

// populate makes sure a contender is on server id, one that holds if it
// can: it waits a while for a holder to be there, and if none is, moves a
// contender that holds nothing there and waits a while more for one (the
// one moved may be granted). It returns the contenders on id.
func (r *run) populate(id int) []*proc {
	wait := func(d time.Duration) []*proc {
		deadline := time.Now().Add(d)
		for {
			on := r.linked(id)
			if (len(on) > 0 && r.isHolding(on[0])) || time.Now().After(deadline) {
				return on
			}
			time.Sleep(20 * time.Millisecond) // polling the live view
		}
	}
	if on := wait(2 * time.Second); len(on) > 0 && r.isHolding(on[0]) {
		return on
	}
	if p := r.waiter(); !r.isHolding(p) {
		r.steer(p, id)
	}
	return wait(2 * time.Second)
}

// steer moves p's link to server id: its proxy refuses the others until
// the client is there.
func (r *run) steer(p *proc, id int) {
	px := r.proxies[p.slot]
	if s := px.Servers(); len(s) == 1 && s[0] == id {
		return
	}
	r.record(Event{Kind: KindSteer, Client: p.id, Detail: fmt.Sprintf("server%d", id)})
	var others []int
	for _, s := range r.env.Cluster.Servers() {
		if s.ID != id {
			others = append(others, s.ID)
		}
	}
	px.Refuse(others...)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if s := px.Servers(); len(s) == 1 && s[0] == id {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling the proxy's links
	}
	px.Heal()
}

// followers returns the ensemble's servers but the leader.
func (r *run) followers(leader *zktest.Server) []*zktest.Server {
	var out []*zktest.Server
	for _, s := range r.env.Cluster.Servers() {
		if s.ID != leader.ID {
			out = append(out, s)
		}
	}
	return out
}

// busiest returns the server among ss with the most contenders on it,
// holders counting first.
func (r *run) busiest(ss []*zktest.Server) *zktest.Server {
	best, score := ss[r.rng.IntN(len(ss))], -1
	for _, s := range ss {
		on := r.linked(s.ID)
		n := 2 * len(on)
		if len(on) > 0 && r.isHolding(on[0]) {
			n += 100
		}
		if n > score {
			best, score = s, n
		}
	}
	return best
}

// partition cuts server s off from the rest of the ensemble for d, with
// the contenders on it; confine, if not nil, is also cut off from the
// majority's servers, so that it stays with s. Each contender on the
// minority side is recorded (KindMinority) when the partition begins.
func (r *run) partition(f Fault, s *zktest.Server, confine *proc, d time.Duration) {
	on := r.linked(s.ID)
	if confine != nil {
		var others []int
		for _, o := range r.env.Cluster.Servers() {
			if o.ID != s.ID {
				others = append(others, o.ID)
			}
		}
		r.proxies[confine.slot].Refuse(others...)
		if !slices.Contains(on, confine) {
			on = append(on, confine)
		}
	}
	target := fmt.Sprintf("server%d", s.ID)
	detail := string(f) + " " + target
	names := make([]string, 0, len(on))
	holding := false
	for _, p := range on {
		names = append(names, p.id)
		holding = holding || r.isHolding(p)
	}
	sort.Strings(names)
	detail += " minority [" + strings.Join(names, " ") + "]"
	if holding {
		detail += " (holding)"
	}
	r.env.Cluster.Partition(s.ID)
	r.record(Event{Kind: KindFault, Client: target, Detail: detail})
	for _, p := range on {
		m := string(f) + " " + target
		if p == confine {
			m += " confined"
		}
		r.record(Event{Kind: KindMinority, Client: p.id, Detail: m})
	}
	time.Sleep(d)
	r.env.Cluster.HealPartition()
	if confine != nil {
		r.proxies[confine.slot].Heal()
	}
	r.env.Cluster.WaitServing(time.Minute)
	r.record(Event{Kind: KindHeal, Client: target, Detail: string(f) + " " + target})
}

// ensembleFault injects the faults on the ensemble itself: partitions,
// restarts, a lagging follower. It reports false for any other fault.
func (r *run) ensembleFault(f Fault) bool {
	st := r.cfg.SessionTimeout
	c := r.env.Cluster
	switch f {
	case PartitionLeader:
		leader := c.Leader(30 * time.Second)
		r.populate(leader.ID)
		r.partition(f, leader, nil, 3*st/2)
	case PartitionFollower:
		s := r.busiest(r.followers(c.Leader(30 * time.Second)))
		r.populate(s.ID)
		r.partition(f, s, nil, 3*st/2)
	case PartitionLeaderClient:
		leader := c.Leader(30 * time.Second)
		on := r.populate(leader.ID)
		var p *proc
		if len(on) > 0 {
			p = on[0]
		} else {
			p, _ = r.holder()
		}
		// Long enough for the majority to elect a leader (a second or so),
		// expire the confined client's session and grant what it held,
		// while it is still cut off.
		r.partition(f, leader, p, 5*st/2)
	case RollingRestart:
		leader := c.Leader(30 * time.Second)
		order := append(r.followers(leader), leader) // as operators do: the leader last
		names := make([]string, len(order))
		for i, s := range order {
			names[i] = fmt.Sprintf("server%d", s.ID)
		}
		r.record(Event{Kind: KindFault, Client: "ensemble", Detail: string(f) + " " + strings.Join(names, " ") + r.holdingNote()})
		for _, s := range order {
			s.Restart() // waits until it serves again
			c.WaitServing(time.Minute)
		}
		r.record(Event{Kind: KindHeal, Client: "ensemble", Detail: string(f)})
	case KillServer:
		s := r.busiest(c.Servers())
		on := r.populate(s.ID)
		target := fmt.Sprintf("server%d", s.ID)
		before := snapshotFiles(s.SnapshotDir())
		note := ""
		if len(on) > 0 && r.isHolding(on[0]) {
			note = " (holding)"
		}
		r.record(Event{Kind: KindFault, Client: target, Detail: fmt.Sprintf("%s %s with %s%s", f, target, before, note)})
		s.Kill()
		s.Start() // from the same data directory, at once
		r.record(Event{Kind: KindHeal, Client: target, Detail: fmt.Sprintf("%s %s %s", f, target, restored(s.LogTail(400)))})
	case LagFollower:
		leader := c.Leader(30 * time.Second)
		s := r.busiest(r.followers(leader))
		on := r.populate(s.ID)
		// Below syncLimit ticks, or the leader drops the follower and it
		// is a partition, not a lag.
		lag := 200*time.Millisecond + time.Duration(r.rng.IntN(400))*time.Millisecond
		names := make([]string, len(on))
		holding := false
		for i, p := range on {
			names[i] = p.id
			holding = holding || r.isHolding(p)
		}
		target := fmt.Sprintf("server%d", s.ID)
		detail := fmt.Sprintf("%s %s %s behind server%d, clients [%s]", f, target, lag, leader.ID, strings.Join(names, " "))
		if holding {
			detail += " (holding)"
		}
		r.record(Event{Kind: KindFault, Client: target, Detail: detail})
		c.PeerProxy(s.ID, leader.ID).LagReplies(lag)
		time.Sleep(3 * st / 2)
		c.PeerProxy(s.ID, leader.ID).Heal()
		r.record(Event{Kind: KindHeal, Client: target, Detail: string(f) + " " + target})
	default:
		return false
	}
	return true
}

// holdingNote is " (holding)" when some contender holds now.
func (r *run) holdingNote() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.holding) > 0 {
		return " (holding)"
	}
	return ""
}

// snapshotFiles describes what a server has to restore from: its newest
// snapshot and how many transaction logs it keeps.
func snapshotFiles(dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "no data directory"
	}
	snap, logs := "", 0
	for _, e := range ents {
		switch n := e.Name(); {
		case strings.HasPrefix(n, "snapshot."):
			// The suffix is the zxid in hex, not zero-padded: compare by
			// length first.
			if len(n) > len(snap) || (len(n) == len(snap) && n > snap) {
				snap = n
			}
		case strings.HasPrefix(n, "log."):
			logs++
		}
	}
	if snap == "" {
		snap = "no snapshot"
	}
	return fmt.Sprintf("%s and %d logs", snap, logs)
}

// restored picks, from a restarted server's log, the lines that say what it
// restored: the snapshot it loaded and the transactions it replayed after.
func restored(log string) string {
	lines := strings.Split(log, "\n")
	var snap, txns string
	for _, l := range lines {
		if i := strings.Index(l, "Snapshot loaded in"); i >= 0 {
			snap = strings.TrimSpace(l[i:])
		}
		if i := strings.Index(l, "txns loaded in"); i >= 0 {
			if f := strings.Fields(l[:i]); len(f) > 0 {
				txns = f[len(f)-1]
			}
		}
	}
	if snap == "" {
		return "restored from: (not in its log)"
	}
	out := "restored: " + snap
	if txns != "" {
		out += "; " + txns + " txns replayed from the log"
	}
	return out
}

// markServers notes how far every server's log went when the run began.
func (r *run) markServers() {
	r.marks = map[int]int64{}
	for _, s := range r.env.Cluster.Servers() {
		if st, err := os.Stat(s.LogPath()); err == nil {
			r.marks[s.ID] = st.Size()
		}
	}
}

// checkServers runs once everything is quiet: no server may have found its
// data tree's digest differing from the one the leader recorded with a
// transaction it applied, since the run began (a follower checks it at
// every transaction), and once the last writes have reached them all,
// every server must hold as many nodes as the others (server-divergence).
// Each server's log since the run began goes to logs/server<N>.log.
//
// A server starting up reports mismatches of its own making: its snapshot
// is fuzzy (taken while transactions went on being applied), and it
// replays the log from the snapshot's name, applying again transactions
// the snapshot already holds. Those come from its main thread, and are not
// counted.
func (r *run) checkServers() {
	servers := r.env.Cluster.Servers()
	// The ensemble lives on through the recipes' runs, so each server's
	// whole log is searched, not only this run's.
	logs := map[int]string{}
	for _, s := range servers {
		if b, err := os.ReadFile(s.LogPath()); err == nil {
			logs[s.ID] = string(b)
		}
	}
	bug, unproven := serverBug(logs, r.replicas)
	diverged := func(format string, args ...any) {
		if bug == "" {
			r.violate("server-divergence", format+"%s", append(args, unproven)...)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.serverBugs = append(r.serverBugs, fmt.Sprintf(format, args...)+"; after "+bug)
	}
	for _, s := range servers {
		n, first := divergence(r.saveServerLog(s, r.marks[s.ID]))
		if n > 0 {
			diverged("server%d found its data tree differing from the leader's (%d log lines, see logs/server%d.log), first: %s", s.ID, n, s.ID, first)
		}
	}
	var counts []string
	for deadline := time.Now().Add(15 * time.Second); ; {
		counts = counts[:0]
		same := true
		var first int64 = -1
		for _, s := range servers {
			n, err := mntr(s, "zk_znode_count")
			if err != nil {
				same = false
			}
			if first < 0 {
				first = n
			}
			same = same && n == first
			counts = append(counts, fmt.Sprintf("server%d %d", s.ID, n))
		}
		if same || time.Now().After(deadline) {
			if !same {
				diverged("the servers hold different numbers of nodes: %s", strings.Join(counts, ", "))
			}
			return
		}
		time.Sleep(200 * time.Millisecond) // the last writes on their way
	}
}

// serverBug finds the evidence that the servers diverged through
// ZooKeeper's own bug: a server whose log (logs, by server ID) shows it
// truncated its log past a snapshot it then loaded (truncatedPastSnapshot),
// and whose snapshot's zxid the servers' data shows the quorum never
// committed (zxidProof.neverCommitted). Such a replica stays apart until a
// full snapshot sync. The log only says what the server did; the data says
// it holds what the quorum never had. It returns the evidence, or why a
// truncation found in a log is not proven.
func serverBug(logs map[int]string, replicas func() []*replica) (bug, unproven string) {
	ids := make([]int, 0, len(logs))
	for id := range logs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		tr, ok := truncatedPastSnapshot(logs[id])
		if !ok {
			continue
		}
		p := proveZxid(replicas(), tr.snapshot)
		if p.neverCommitted() {
			return fmt.Sprintf("server%d: %s; %s", id, tr, p), ""
		}
		if unproven == "" {
			unproven = fmt.Sprintf(" (server%d: %s, but the servers' data does not show that the quorum never had it: %s)", id, tr, p)
		}
	}
	return "", unproven
}

// divergence counts the lines of a server's log that report its data
// tree's digest differing from the one recorded with a transaction, but
// those of its start-up replay (its main thread's), and returns the first.
func divergence(log string) (n int, first string) {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "[main]") || !(strings.Contains(l, "Digests are not matching") || strings.Contains(l, "digest mismatch")) {
			continue
		}
		if n == 0 {
			first = l
		}
		n++
	}
	return n, first
}

// truncation is a server's truncation past a snapshot it then loaded
// (truncatedPastSnapshot).
type truncation struct {
	to, snapshot int64
	at           string // the truncation's log line's time
}

func (t truncation) String() string {
	return fmt.Sprintf("truncated its log to 0x%x, then loaded snapshot 0x%x, which holds transactions past it (ZooKeeper's TRUNC sync keeps a newer snapshot; at %s)", t.to, t.snapshot, t.at)
}

// truncatedPastSnapshot finds, in a server's log, ZooKeeper 3.8's loss of
// agreement through a TRUNC sync: told by a new leader to truncate its
// log to zxid Z (it had transactions the leader does not), the follower
// truncates the log but then loads its newest snapshot, named S > Z,
// which holds transactions past Z: its data tree keeps what the quorum
// does not have, and every later digest check on it fails. The server
// only reads the snapshot the truncation should have discarded; no client
// request makes that happen. It returns the first such truncation.
func truncatedPastSnapshot(log string) (truncation, bool) {
	var trunc string
	var to int64
	for _, l := range strings.Split(log, "\n") {
		if i := strings.Index(l, "Truncating log to get in sync with the leader 0x"); i >= 0 {
			z, err := strconv.ParseUint(strings.TrimSpace(l[i+len("Truncating log to get in sync with the leader 0x"):]), 16, 63)
			if err == nil {
				trunc, to = l, int64(z)
			}
			continue
		}
		if trunc == "" {
			continue
		}
		if i := strings.Index(l, "/snapshot."); i >= 0 && strings.Contains(l, "Reading snapshot") {
			s, err := strconv.ParseUint(strings.TrimSpace(l[i+len("/snapshot."):]), 16, 63)
			if err == nil && int64(s) > to {
				return truncation{to: to, snapshot: int64(s), at: strings.Fields(trunc)[0]}, true
			}
			trunc = ""
		}
	}
	return truncation{}, false
}

// saveServerLog copies s's log from offset from to the run's logs, and
// returns it.
func (r *run) saveServerLog(s *zktest.Server, from int64) string {
	b, err := os.ReadFile(s.LogPath())
	if err != nil {
		return ""
	}
	if from > int64(len(b)) {
		from = 0
	}
	_ = os.WriteFile(filepath.Join(r.cfg.OutDir, "logs", fmt.Sprintf("server%d.log", s.ID)), b[from:], 0o644)
	return string(b[from:])
}

// mntr reads one number from the server's mntr output.
func mntr(s *zktest.Server, key string) (int64, error) {
	out, err := zktest.FourLetter(s.DirectAddr(), "mntr", 3*time.Second)
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == key {
			return strconv.ParseInt(f[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("server%d: no %s in mntr", s.ID, key)
}
