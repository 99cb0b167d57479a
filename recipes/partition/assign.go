package partition

import (
	"hash/fnv"
	"sort"
)

// score is the rendezvous weight of the pair (member, item): a 64-bit hash
// of both, mixed so that near-identical names do not give near-identical
// weights (FNV alone spreads them poorly).
func score(member, item string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(member))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(item))
	x := h.Sum64()
	// splitmix64's finaliser.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Assign returns the owner of every item among members, given the items'
// current owners (item to member id; an item missing from owners, or owned
// by an id that is not in members, has none): the function every member of
// a partition computes from the same view and so agrees on without
// talking. It is sticky: an item stays with its owner unless the spread
// needs it elsewhere, so a join or a leave moves about the ideal share.
//
//   - Capacities. Every member may have q = len(items)/len(members) items,
//     and r = len(items)%len(members) of them one more: the spread is even
//     (at most one apart). The r extra slots go to the members that own
//     more than q items now (so that none has to give one up for nothing),
//     then to the others, each group in the order of the member ids.
//   - Keep. Each member keeps, of the items it owns, up to its capacity:
//     those it weighs most (rendezvous weight).
//   - Place. The other items go by rendezvous hashing with bounded loads to
//     the members with room: pairs (item, member) heaviest first, each item
//     to the first member with room.
//
// From a stable partition (owners Assign's own answer), a join then moves
// len(items)/(len(members)+1) items to the newcomer and nothing else, a
// leave moves only the leaver's items, and a member whose items were given
// up in a blip, unowned since, gets them back: the others have no room
// (BenchmarkAssignJoin, BenchmarkAssignLeave).
//
// It is stable along the way to its own answer: if some items move from
// their owners to the members Assign gave them (or are given up and not yet
// taken), Assign over the new owners gives the same answer. That is what
// lets members act on it while the owners they read change under them (the
// package documentation has the argument). With owners nil it is
// rendezvous hashing with bounded loads over the members.
//
// Duplicate names count once. With no members, Assign returns an empty map.
// It costs O(len(items)·len(members)·log) time.
func Assign(items, members []string, owners map[string]string) map[string]string {
	items, members = uniq(items), uniq(members)
	out := make(map[string]string, len(items))
	if len(members) == 0 || len(items) == 0 {
		return out
	}
	owned := ownedBy(items, members, owners)
	room := capacities(len(items), members, owned)
	keep(owned, room, out)
	place(items, members, room, out)
	return out
}

// ownedBy returns the items each member owns now, by member; an item
// whose owner is not a member is nobody's.
func ownedBy(items, members []string, owners map[string]string) map[string][]string {
	owned := make(map[string][]string, len(members))
	isMember := make(map[string]bool, len(members))
	for _, m := range members {
		isMember[m] = true
	}
	for _, it := range items {
		if m, ok := owners[it]; ok && isMember[m] {
			owned[m] = append(owned[m], it)
		}
	}
	return owned
}

// capacities returns how many of n items each member may have: q =
// n/len(members), and q+1 for r = n%len(members) of them, those owning
// more than q now first, then the others, each group in id order.
func capacities(n int, members []string, owned map[string][]string) map[string]int {
	q, r := n/len(members), n%len(members)
	// Who gets the r extra slots depends on one bit per member, over q or
	// not, which does not change while items move towards the answer: a
	// member over q only gives items up, down to its capacity, so it stays
	// over q if it got a slot and may only fall below the others if it did
	// not; a member at or under q only gains, up to its capacity, so it
	// rises over q only if it got one. Ranking by the count itself would
	// swap slots back and forth while members catch up.
	byRank := append([]string(nil), members...)
	sort.Slice(byRank, func(i, j int) bool {
		a, b := len(owned[byRank[i]]) > q, len(owned[byRank[j]]) > q
		if a != b {
			return a
		}
		return byRank[i] < byRank[j]
	})
	room := make(map[string]int, len(members))
	for i, m := range byRank {
		room[m] = q
		if i < r {
			room[m]++
		}
	}
	return room
}

// keep gives each member, in out, the items it owns that it weighs most,
// up to its room, and takes them off its room.
func keep(owned map[string][]string, room map[string]int, out map[string]string) {
	for m, its := range owned {
		sort.Slice(its, func(i, j int) bool {
			a, b := score(m, its[i]), score(m, its[j])
			if a != b {
				return a > b
			}
			return its[i] < its[j]
		})
		for _, it := range its[:min(len(its), room[m])] {
			out[it] = m
		}
		room[m] -= min(len(its), room[m])
	}
}

// place gives every item not in out yet to a member with room, by
// rendezvous hashing with bounded loads: pairs (item, member) heaviest
// first, each item to the first member with room.
func place(items, members []string, room map[string]int, out map[string]string) {
	type pair struct {
		item, member string
		w            uint64
	}
	var pairs []pair
	for _, it := range items {
		if _, kept := out[it]; kept {
			continue
		}
		for _, m := range members {
			if room[m] > 0 {
				pairs = append(pairs, pair{it, m, score(m, it)})
			}
		}
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].w != pairs[j].w {
			return pairs[i].w > pairs[j].w
		}
		if pairs[i].item != pairs[j].item {
			return pairs[i].item < pairs[j].item
		}
		return pairs[i].member < pairs[j].member
	})
	// Every item is placed: the rooms add up to the items left, and were
	// one left when its last pair came, every member would be full.
	for _, p := range pairs {
		if _, done := out[p.item]; done || room[p.member] == 0 {
			continue
		}
		out[p.item] = p.member
		room[p.member]--
	}
}

func uniq(s []string) []string {
	seen := make(map[string]struct{}, len(s))
	out := make([]string, 0, len(s))
	for _, v := range s {
		if _, ok := seen[v]; !ok {
			seen[v] = struct{}{}
			out = append(out, v)
		}
	}
	return out
}
