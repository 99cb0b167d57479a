package engine

import "testing"

// The shortcut for names that end in a marker and ten digits gives the key
// the search gives, for every name built from pieces that could fool it:
// markers inside the digits' reach, markers that end in a digit, several
// occurrences, names too short for the digits.
func TestSortKeyShortcutAgreesWithTheSearch(t *testing.T) {
	markerSets := [][]string{
		{"lock-"}, {"__READ__", "__WRIT__"}, {"latch-"}, {"lease-"},
		{"a1"}, {"9"}, {""}, {"lock-", "0"}, {"-"}, {"00"},
	}
	pieces := []string{"", "lock-", "__READ__", "__WRIT__", "a1", "9", "-", "x", "0000000007", "12345", "_c_1b4e28ba-2fa1-11d2-883f-0016d3cca427-"}
	var names []string
	var build func(p string, depth int)
	build = func(p string, depth int) {
		names = append(names, p)
		if depth == 0 {
			return
		}
		for _, s := range pieces {
			build(p+s, depth-1)
		}
	}
	build("", 3)
	n := 0
	for _, ms := range markerSets {
		for _, name := range names {
			if got, want := SortKey(name, ms...), searchKey(name, ms); got != want {
				t.Fatalf("SortKey(%q, %q) = %q, the search says %q", name, ms, got, want)
			}
			if _, ok := seqKey(name, ms); ok {
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("the shortcut was never taken")
	}
	t.Logf("%d names, %d by the shortcut", len(names)*len(markerSets), n)
}
