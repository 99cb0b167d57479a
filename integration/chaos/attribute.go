package chaos

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Violations of ZooKeeper's own. A replica that diverged (see
// truncatedPastSnapshot) can serve a node created by a transaction the
// quorum never committed, and a contender on it is then granted a hold on
// that node: two holders at once, a token out of order. The recipe did
// what the server told it; the server was wrong. Such a violation is
// ZooKeeper's own only on evidence the suite checks, never on timing:
//
//   - it names such a hold or register node (Violation.Zxids), and the
//     servers' own data directories prove the zxid that created it was
//     had by a server and never by a majority (zxidProof.neverCommitted);
//   - the checker, run again over the history without the holds and
//     register nodes of those zxids, no longer finds it.
//
// Every violation the second run finds counts, those the first run had
// not found included (a phantom hold can hide a real token regression
// behind it), and so does every violation that is not about who held
// what: a loss signal late, a stall, an orphan.

// attributable reports whether v may be ZooKeeper's own: it is about who
// held what (it names the nodes it rests on), or it is the history that
// fits no lock, which a hold the quorum never granted can make.
func attributable(v Violation) bool {
	return len(v.Zxids) > 0 || v.Kind == "not-linearizable"
}

// attribute moves to rep.ServerBugs, with their evidence, the violations
// that rest on nodes the quorum never committed. replicas reads the
// servers' data directories (called only if a violation may be
// ZooKeeper's own); tokens are every hold's token of the history, the
// nodes a not-linearizable history may rest on; recheck runs the checker
// again over the history without the holds and register nodes whose
// zxids are in drop.
func attribute(rep *Report, replicas func() []*replica, tokens []int64, recheck func(drop map[int64]bool) []Violation) {
	var candidates []int64
	for _, v := range rep.Violations {
		if !attributable(v) {
			continue
		}
		candidates = append(candidates, v.Zxids...)
		if v.Kind == "not-linearizable" {
			candidates = append(candidates, tokens...)
		}
	}
	if len(candidates) == 0 {
		return
	}
	slices.Sort(candidates)
	candidates = slices.Compact(candidates)
	rs := replicas()
	phantoms := map[int64]zxidProof{}
	for _, z := range candidates {
		if p := proveZxid(rs, z); p.neverCommitted() {
			phantoms[z] = p
		}
	}
	if len(phantoms) == 0 {
		return
	}
	drop := make(map[int64]bool, len(phantoms))
	for z := range phantoms {
		drop[z] = true
	}
	again := recheck(drop)
	found := make(map[string]bool, len(again))
	for _, v := range again {
		found[v.Kind+"\x00"+v.Detail] = true
	}
	had := make(map[string]bool, len(rep.Violations))
	var kept []Violation
	for _, v := range rep.Violations {
		k := v.Kind + "\x00" + v.Detail
		had[k] = true
		if found[k] || !attributable(v) {
			kept = append(kept, v)
			continue
		}
		var evidence []string
		for _, z := range sortedZxids(phantoms) {
			if v.Kind == "not-linearizable" || slices.Contains(v.Zxids, z) {
				evidence = append(evidence, phantoms[z].String())
			}
		}
		if len(evidence) == 0 {
			kept = append(kept, v) // it names no phantom: it is the recipe's
			continue
		}
		rep.ServerBugs = append(rep.ServerBugs, fmt.Sprintf("%s: %s; it rests on a node the quorum never committed, and the history without it has no such violation: %s",
			v.Kind, v.Detail, strings.Join(evidence, "; ")))
	}
	for _, v := range again {
		if !had[v.Kind+"\x00"+v.Detail] {
			kept = append(kept, v)
		}
	}
	rep.Violations = kept
}

func sortedZxids(m map[int64]zxidProof) []int64 { return slices.Sorted(maps.Keys(m)) }

// withoutHolds is history without the events of the holds whose token is
// in drop (every event of the contender's op that was granted it).
func withoutHolds(history []Event, drop map[int64]bool) []Event {
	if len(drop) == 0 {
		return history
	}
	type hold struct {
		client string
		op     int
	}
	gone := map[hold]bool{}
	for _, e := range history {
		if e.Kind == KindAcquireOK && drop[e.Token] {
			gone[hold{e.Client, e.Op}] = true
		}
	}
	out := make([]Event, 0, len(history))
	for _, e := range history {
		if e.Op != 0 && gone[hold{e.Client, e.Op}] {
			continue
		}
		out = append(out, e)
	}
	return out
}

// withoutEntries is entries without the register nodes created by a zxid
// in drop.
func withoutEntries(entries []RegisterEntry, drop map[int64]bool) []RegisterEntry {
	if len(drop) == 0 {
		return entries
	}
	out := make([]RegisterEntry, 0, len(entries))
	for _, e := range entries {
		if !drop[e.Czxid] {
			out = append(out, e)
		}
	}
	return out
}

// holdTokens lists the tokens of every grant in history.
func holdTokens(history []Event) []int64 {
	var out []int64
	for _, e := range history {
		if e.Kind == KindAcquireOK && e.Token != 0 {
			out = append(out, e.Token)
		}
	}
	return out
}
