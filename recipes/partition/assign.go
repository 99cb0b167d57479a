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

// Assign returns the owner of every item among members: rendezvous hashing
// with bounded loads, the function every member of a partition computes
// from the same view and so agrees on without talking.
//
// Every member gets len(items)/len(members) items, and the first
// len(items)%len(members) members in the order of their own weight one more:
// the spread is even (at most one apart). Within those quotas each item goes
// to the member that weighs it most, pairs taken heaviest first: a member
// that joins takes the items it weighs most from everyone, and a member that
// leaves gives its items to whoever weighs each most among those with room,
// so most items stay where they are. What the quotas cost: an item pushed out
// of a member whose quota shrank may push another, so a join moves a little
// more than the ideal share len(items)/(len(members)+1), more so with few
// items per member (BenchmarkAssignJoin measures it).
//
// Duplicate names count once. With no members, Assign returns an empty map.
// It costs O(len(items)·len(members)·log) time.
func Assign(items, members []string) map[string]string {
	items, members = uniq(items), uniq(members)
	out := make(map[string]string, len(items))
	if len(members) == 0 || len(items) == 0 {
		return out
	}
	byWeight := append([]string(nil), members...)
	sort.Slice(byWeight, func(i, j int) bool {
		a, b := score(byWeight[i], ""), score(byWeight[j], "")
		if a != b {
			return a > b
		}
		return byWeight[i] < byWeight[j]
	})
	q, r := len(items)/len(members), len(items)%len(members)
	room := make(map[string]int, len(members))
	for i, m := range byWeight {
		room[m] = q
		if i < r {
			room[m]++
		}
	}
	type pair struct {
		item, member string
		w            uint64
	}
	pairs := make([]pair, 0, len(items)*len(members))
	for _, it := range items {
		for _, m := range members {
			pairs = append(pairs, pair{it, m, score(m, it)})
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
	// Every item is placed: were one left when its last pair came, every
	// member would be full, so len(items) others would be placed already.
	for _, p := range pairs {
		if _, done := out[p.item]; done || room[p.member] == 0 {
			continue
		}
		out[p.item] = p.member
		room[p.member]--
	}
	return out
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
