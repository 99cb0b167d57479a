package framework

import "testing"

// The one-pass check accepts a path only if the general check does, so
// every refusal, and its message, still comes from the general check.
// Exhaustive over short paths of the characters that matter: separators,
// dots, the printable ASCII edges, control and DEL bytes, invalid UTF-8
// and a multi-byte rune.
func TestPlainPathAcceptsOnlyWhatThePathCheckAccepts(t *testing.T) {
	accepted, n := 0, 0
	walkPaths([]string{"/", ".", "a", " ", "~", "\x00", "\x1f", "\x7f", "\xff", "é"}, 5, func(p string, seq bool) {
		n++
		err := pathError(p, seq)
		if plainPath(p, seq) {
			accepted++
			if err != nil {
				t.Fatalf("%q sequential=%v: one-pass check accepts, general check says %v", p, seq, err)
			}
		}
		// validatePath's verdict is the general check's, whichever path
		// it took.
		if got := validatePath(p, seq); (got == nil) != (err == nil) || (err != nil && got.Error() != err.Error()) {
			t.Fatalf("%q sequential=%v: validatePath %v, general check %v", p, seq, got, err)
		}
	})
	if accepted == 0 {
		t.Fatal("the one-pass check accepted nothing")
	}
	t.Logf("%d cases, %d taken by the one-pass check", n, accepted)
}

// walkPaths calls f with every path of up to depth pieces of alphabet,
// sequential and not.
func walkPaths(alphabet []string, depth int, f func(p string, sequential bool)) {
	var walk func(p string, depth int)
	walk = func(p string, depth int) {
		f(p, false)
		f(p, true)
		if depth == 0 {
			return
		}
		for _, s := range alphabet {
			walk(p+s, depth-1)
		}
	}
	walk("", depth)
}

// Paths that requests send every day take the one-pass check.
func TestPlainPathTakesEverydayPaths(t *testing.T) {
	for _, c := range []struct {
		path string
		seq  bool
	}{
		{"/", false},
		{"/locks/job-42", false},
		{"/zkr-bench/contended-abc/_c_7d4e1a2b-0c3d-4e5f-8a9b-0c1d2e3f4a5b-lock-0000000017", false},
		{"/locks/job-42/_c_7d4e1a2b-0c3d-4e5f-8a9b-0c1d2e3f4a5b-lock-", true},
		{"/locks/", true},
		{"/a.b/..c/...", false},
	} {
		if !plainPath(c.path, c.seq) {
			t.Errorf("%q sequential=%v: not taken by the one-pass check", c.path, c.seq)
		}
	}
}

func BenchmarkEnginePathCheck(b *testing.B) {
	const p = "/zkr-bench/contended-abc/_c_7d4e1a2b-0c3d-4e5f-8a9b-0c1d2e3f4a5b-lock-0000000017"
	b.Run("validatePath", func(b *testing.B) {
		for b.Loop() {
			if validatePath(p, false) != nil {
				b.Fatal("refused")
			}
		}
	})
	b.Run("general", func(b *testing.B) {
		for b.Loop() {
			if pathError(p, false) != nil {
				b.Fatal("refused")
			}
		}
	})
}
