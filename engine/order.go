package engine

import (
	"cmp"
	"slices"
	"strings"
)

// SortKey is Curator's fixForSorting: the part of name after the last
// occurrence of any marker, or the whole name if none occurs.
func SortKey(name string, markers ...string) string {
	if k, ok := seqKey(name, markers); ok {
		return k
	}
	return searchKey(name, markers)
}

// searchKey is SortKey by searching name backwards for each marker.
func searchKey(name string, markers []string) string {
	best := -1
	for _, m := range markers {
		if i := strings.LastIndex(name, m); i >= 0 && i+len(m) > best {
			best = i + len(m)
		}
	}
	if best < 0 {
		return name
	}
	return name[best:]
}

// seqKey is SortKey for the names nearly every queue holds: a marker, then
// ZooKeeper's ten-digit sequence number at the end. A marker whose last
// byte is not a digit cannot occur again inside those digits, so that
// occurrence is the last one of every marker, and no backwards search
// through the name is needed (it was the largest cost of a look at the
// queue). ok is false when SortKey must search.
func seqKey(name string, markers []string) (string, bool) {
	n := len(name)
	if n < 10 {
		return "", false
	}
	for i := n - 10; i < n; i++ {
		if name[i] < '0' || name[i] > '9' {
			return "", false
		}
	}
	found := false
	for _, m := range markers {
		if m == "" || (m[len(m)-1] >= '0' && m[len(m)-1] <= '9') {
			return "", false
		}
		if n-10 >= len(m) && name[n-10-len(m):n-10] == m {
			found = true
		}
	}
	if !found {
		return "", false
	}
	return name[n-10:], true
}

// Sort orders children as Curator does: by SortKey, as strings. Every child
// counts, as in Curator, so that both see the same queue.
func Sort(children []string, markers ...string) []string {
	out := slices.Clone(children)
	slices.SortFunc(out, func(a, b string) int {
		if c := strings.Compare(SortKey(a, markers...), SortKey(b, markers...)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return out
}

// Ahead returns, in queue order, the children that sort before ours, then
// ours: all a Driver needs, since no recipe's decision depends on who queued
// later. It scans once and sorts only the nodes ahead, so a deep queue costs
// a linear pass per look rather than a full sort. ok is false if ours is not
// among children.
func Ahead(children []string, ours string, markers ...string) (ahead []string, ok bool) {
	key := SortKey(ours, markers...)
	var before []keyed
	for _, c := range children {
		if c == ours {
			ok = true
			continue
		}
		if k := SortKey(c, markers...); k < key || (k == key && c < ours) {
			before = append(before, newKeyed(c, k))
		}
	}
	if !ok {
		return nil, false
	}
	slices.SortFunc(before, keyed.compare)
	ahead = make([]string, 0, len(before)+1)
	for _, k := range before {
		ahead = append(ahead, k.name)
	}
	return append(ahead, ours), true
}

// keyed is a child with its sort key. ZooKeeper's sequence suffixes are ten
// digits: two such keys compare as their numbers do, which is several
// times quicker than comparing the strings, and a deep queue is sorted on
// every look. Other keys compare as strings, so the order is Sort's.
type keyed struct {
	name, key string
	seq       int64 // the key as a number, or -1 if it is not ten digits
}

func newKeyed(name, key string) keyed {
	k := keyed{name: name, key: key, seq: -1}
	if len(k.key) == 10 {
		var n int64
		for i := range 10 {
			d := k.key[i] - '0'
			if d > 9 {
				return k
			}
			n = n*10 + int64(d)
		}
		k.seq = n
	}
	return k
}

func (a keyed) compare(b keyed) int {
	if a.seq >= 0 && b.seq >= 0 {
		if c := cmp.Compare(a.seq, b.seq); c != 0 {
			return c
		}
	} else if c := strings.Compare(a.key, b.key); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}
