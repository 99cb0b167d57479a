package chaos

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/zkrecipes/zkrecipes/framework"
)

// The fenced ZooKeeper register: every hold of a run writes to it only
// through hold.Hold.Fenced, one persistent-sequential node per write under
// the recipe's register path, whose data says who wrote it (registerData).
// ZooKeeper orders the writes itself (each node's czxid), so the checker
// needs no clock: in that order, no write may come from a holder that no
// longer held.

// KindFenced: a holder's fenced write to the register returned. Accepted
// says it committed (Detail: the node it made); else Detail is the error.
const KindFenced Kind = "fenced"

// RegisterEntry is one committed write of the register.
type RegisterEntry struct {
	Path   string
	Czxid  int64
	Token  int64
	Client string
	Op     int
	Mode   string
}

// registerData is what a write stores: enough to find its hold.
func registerData(token int64, client string, op int, mode string) []byte {
	return []byte(fmt.Sprintf("%d %s %d %s", token, client, op, mode))
}

func parseRegisterData(path string, czxid int64, data []byte) (RegisterEntry, error) {
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return RegisterEntry{}, fmt.Errorf("register node %s: data %q", path, data)
	}
	token, err1 := strconv.ParseInt(f[0], 10, 64)
	op, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return RegisterEntry{}, fmt.Errorf("register node %s: data %q", path, data)
	}
	e := RegisterEntry{Path: path, Czxid: czxid, Token: token, Client: f[1], Op: op}
	if len(f) > 3 {
		e.Mode = f[3]
	}
	return e, nil
}

// readRegister returns every write under path, in commit (czxid) order.
func readRegister(ctx context.Context, c *framework.Client, path string) ([]RegisterEntry, error) {
	kids, _, err := c.Children(ctx, path)
	if err != nil {
		return nil, err
	}
	out := make([]RegisterEntry, 0, len(kids))
	for _, k := range kids {
		p := framework.Join(path, k)
		data, st, err := c.Get(ctx, p)
		if err != nil {
			return nil, err
		}
		e, err := parseRegisterData(p, st.Czxid, data)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Czxid < out[j].Czxid })
	return out, nil
}

// CheckRegister checks the register's committed writes, in commit order,
// against the run's history: each came from a hold the history shows
// granted to its writer with its token; an exclusive hold's write never
// follows, in commit order, a write with a higher token (whoever made it:
// that hold was granted after this one ended), and a shared hold's write
// never follows an exclusive hold's write with a higher token; and every
// write a contender saw commit is there. It also counts the contenders'
// fenced writes refused because the hold was lost, and those whose outcome
// was unknown.
func (r *Report) CheckRegister(recipe Recipe, history []Event, entries []RegisterEntry) {
	granted := map[string]bool{} // client/token
	for _, h := range r.Holds {
		granted[fmt.Sprintf("%s/%d", h.Client, h.Token)] = true
	}
	committed := map[string]bool{}
	// The writes with the highest token so far, of any hold and of an
	// exclusive one.
	var maxAny, maxExclusive RegisterEntry
	for _, e := range entries {
		r.RegisterWrites++
		committed[e.Path] = true
		if !granted[fmt.Sprintf("%s/%d", e.Client, e.Token)] {
			r.violateOn([]int64{e.Czxid, e.Token}, "register-non-holder", "%s (czxid %d) written by %s op %d with token %d, never granted to it",
				e.Path, e.Czxid, e.Client, e.Op, e.Token)
		}
		exclusive := recipe.exclusive(e.Mode)
		floor := maxExclusive
		if exclusive {
			floor = maxAny
		}
		if e.Token < floor.Token {
			r.violateOn([]int64{e.Czxid, e.Token, floor.Czxid, floor.Token}, "register-stale-write", "%s (czxid %d) written by %s op %d with token %d after a write with token %d had committed",
				e.Path, e.Czxid, e.Client, e.Op, e.Token, floor.Token)
		}
		if e.Token > maxAny.Token {
			maxAny = e
		}
		if exclusive && e.Token > maxExclusive.Token {
			maxExclusive = e
		}
	}
	if recipe == Semaphore {
		r.checkRegisterCapacity(entries)
	}
	r.checkRegisterAfterDelete(history, entries)
	r.StalledWrites = stalledWrites(history)
	for _, ev := range history {
		if ev.Kind != KindFenced {
			continue
		}
		switch {
		case ev.Accepted:
			if !committed[ev.Detail] {
				r.violate("register-lost-write", "%s op %d saw its fenced write %s commit, and it is not in the register",
					ev.Client, ev.Op, ev.Detail)
			}
		case ev.Class == ClassOutcomeUnknown:
			r.RegisterUnknown++
		case ev.Class == ClassHoldLost:
			r.RegisterRefused++
		default:
			r.RegisterFailed++
		}
	}
}

// checkRegisterAfterDelete: no write of a hold commits after its node was
// deleted. The nemesis read each delete's zxid from the servers
// (KindDeleted), and Fenced's multi checks the hold's node, so a write
// whose czxid is later came through with no check at the server. The
// proof is the servers' own order; no clock is involved.
func (r *Report) checkRegisterAfterDelete(history []Event, entries []RegisterEntry) {
	deleted := map[string]Event{} // client/token -> the delete
	for _, ev := range history {
		if ev.Kind == KindDeleted && ev.Zxid > 0 {
			deleted[fmt.Sprintf("%s/%d", ev.Client, ev.Token)] = ev
		}
	}
	for _, e := range entries {
		d, ok := deleted[fmt.Sprintf("%s/%d", e.Client, e.Token)]
		if ok && e.Czxid > d.Zxid {
			r.violateOn([]int64{e.Czxid, e.Token, d.Zxid}, "register-write-after-delete", "%s (czxid %d) written by %s op %d with token %d after its hold's node %s was deleted (zxid %d)",
				e.Path, e.Czxid, e.Client, e.Op, e.Token, d.Detail, d.Zxid)
		}
	}
}

// stalledWrites counts the fenced writes whose outcome a hold reported
// after a stall-write's proven delete of its node: the held ones.
func stalledWrites(history []Event) int {
	deletedAt := map[string]int64{}
	for k, f := range provenDeletes(history) {
		if strings.HasPrefix(f.Detail, string(StallWrite)+" ") {
			deletedAt[k] = f.T
		}
	}
	n := 0
	for _, e := range history {
		if t, ok := deletedAt[e.Client+"/"+strconv.FormatInt(e.Token, 10)]; ok && e.Kind == KindFenced && e.T > t {
			n++
		}
	}
	return n
}

// checkRegisterCapacity checks a shared recipe's register against its
// capacity. A fenced write proves its hold's node existed when it
// committed, and a node exists from its grant, before its first write, to
// its last: so each hold was alive over the span from its first write to
// its last, and no more spans may overlap than the recipe has leases. (The
// token order check cannot see a stale lease: leases are shared.)
func (r *Report) checkRegisterCapacity(entries []RegisterEntry) {
	type span struct{ first, last, token int64 }
	spans := map[string]*span{}
	for _, e := range entries {
		k := fmt.Sprintf("%s/%d", e.Client, e.Token)
		if sp := spans[k]; sp == nil {
			spans[k] = &span{e.Czxid, e.Czxid, e.Token}
		} else {
			sp.first, sp.last = min(sp.first, e.Czxid), max(sp.last, e.Czxid)
		}
	}
	for _, e := range entries {
		var alive []string
		zxids := []int64{e.Czxid}
		for k, sp := range spans {
			if sp.first <= e.Czxid && e.Czxid <= sp.last {
				alive = append(alive, k)
				zxids = append(zxids, sp.token, sp.first, sp.last)
			}
		}
		if r.capacity > 0 && len(alive) > r.capacity {
			slices.Sort(alive)
			r.violateOn(zxids, "register-over-capacity", "%s (czxid %d): the register proves %d holds alive at once (%v), over %d",
				e.Path, e.Czxid, len(alive), alive, r.capacity)
			return // one is enough; the rest would repeat it
		}
	}
}
