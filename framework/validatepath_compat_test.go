package framework

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes"
)

// oldValidatePath is validatePath before "check a path's segments without
// building a slice" (683b5f9).
func oldValidatePath(path string, sequential bool) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", zkrecipes.ErrInvalidPath, path, why) }
	switch {
	case path == "":
		return bad("empty")
	case path[0] != '/':
		return bad("must start with /")
	case path == "/":
		return nil
	case !sequential && strings.HasSuffix(path, "/"):
		return bad("must not end with /")
	case !utf8.ValidString(path):
		return bad("not valid UTF-8")
	}
	segs := strings.Split(path[1:], "/")
	if sequential && strings.HasSuffix(path, "/") {
		segs = segs[:len(segs)-1]
	}
	for _, seg := range segs {
		switch seg {
		case "":
			return bad("empty segment (//)")
		case ".", "..":
			return bad("relative segment " + seg)
		}
	}
	for _, r := range path {
		if r == 0 || r <= 0x1f || (r >= 0x7f && r <= 0x9f) ||
			(r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) || r > 0xffff {
			return bad(fmt.Sprintf("invalid character %U", r))
		}
	}
	return nil
}

// Every path of up to 6 characters over an alphabet of the characters that
// matter is refused by the path check exactly when the slice-based check it
// replaced refused it, with the same message.
func TestValidatePathRefusesWhatTheSliceBasedCheckRefused(t *testing.T) {
	n := 0
	walkPaths([]string{"/", ".", "a", "\x00", "\xff"}, 6, func(p string, seq bool) {
		n++
		o, w := oldValidatePath(p, seq), validatePath(p, seq)
		if (o == nil) != (w == nil) || (o != nil && o.Error() != w.Error()) {
			t.Fatalf("%q sequential=%v: old %v, new %v", p, seq, o, w)
		}
	})
	t.Logf("%d cases", n)
}
