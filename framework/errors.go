package framework

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes"
)

// RecipeError is the error of a call on a recipe: its message names the
// recipe and the recipe's path, as "mutex /locks/billing: would block",
// and errors.Is and errors.As see through it to Err (a sentinel of package
// zkrecipes, a *OpError, a context's error, ...). A recipe that has no
// path to name (a nil or zero value's) leaves Path empty: "mutex: ...".
type RecipeError struct {
	// Recipe names the recipe, as "mutex" or "double barrier".
	Recipe string
	// Path is the recipe's path, as the caller gave it.
	Path string
	Err  error
}

func (e *RecipeError) Error() string {
	if e.Path == "" {
		return e.Recipe + ": " + e.Err.Error()
	}
	return e.Recipe + " " + e.Path + ": " + e.Err.Error()
}

// Unwrap returns Err.
func (e *RecipeError) Unwrap() error { return e.Err }

// RecipeErr returns err in a *RecipeError for recipe at path, or nil for
// nil; an err that already names the same recipe and path is returned as
// it is. A recipe of your own can name its errors the same way.
func RecipeErr(recipe, path string, err error) error {
	if err == nil {
		return nil
	}
	if re, ok := err.(*RecipeError); ok && re.Recipe == recipe && re.Path == path {
		return err
	}
	return &RecipeError{Recipe: recipe, Path: path, Err: err}
}

// MultiOpError is the error of a multi that one of its ops failed: the
// server applied none of them. Index is the failing op's position among
// the ops the caller gave, Path its path (as the caller gave it), and Err
// the server's error for it (zk.ErrBadVersion, zk.ErrNoNode, ...).
type MultiOpError struct {
	Index int
	Path  string
	Err   error
}

func (e *MultiOpError) Error() string {
	return fmt.Sprintf("op %d (%s): %v", e.Index, e.Path, e.Err)
}

// Unwrap returns the server's error for the op.
func (e *MultiOpError) Unwrap() error { return e.Err }

// OpError is the error of one operation on one path. Path is as the caller
// gave it, without the namespace.
type OpError struct {
	Op   string
	Path string
	Err  error
}

func (e *OpError) Error() string { return "zookeeper " + e.Op + " " + e.Path + ": " + e.Err.Error() }

// Unwrap returns the underlying error (a zk sentinel, a context error, ...).
func (e *OpError) Unwrap() error { return e.Err }

func opErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	return &OpError{Op: op, Path: path, Err: err}
}

// ValidatePath reports why path is not a usable path for a node, or nil:
// what every recipe checks before it sends anything.
func ValidatePath(path string) error { return validatePath(path, false) }

// ValidateRecipePath is ValidatePath for the path a recipe is built on,
// which must also not be the root: a recipe's nodes go under its path (the
// root's children include /zookeeper, which would count as a member or a
// contender), and a value or a barrier node at the root cannot be made or
// deleted. Every recipe's constructor checks its paths with it, so that a
// recipe written with this package refuses the same paths ours do. The
// error wraps zkrecipes.ErrInvalidPath.
func ValidateRecipePath(path string) error {
	if err := validatePath(path, false); err != nil {
		return err
	}
	if path == "/" {
		return fmt.Errorf("%w %q: the root cannot be a recipe's path", zkrecipes.ErrInvalidPath, path)
	}
	return nil
}

// validatePath is ValidatePath where a sequential create may end in "/"
// (the server appends the sequence number).
func validatePath(path string, sequential bool) error {
	if plainPath(path, sequential) {
		return nil
	}
	return pathError(path, sequential)
}

// plainPath reports, in one pass over the bytes, whether path is a good
// path of printable ASCII: what nearly every request sends. Every request
// checks its path, and the general check below (UTF-8, segments, then
// runes) cost as much as a lock operation's own logic. false means only
// "ask pathError", which decides and says why.
func plainPath(path string, sequential bool) bool {
	n := len(path)
	if n == 0 || path[0] != '/' {
		return false
	}
	end := n
	if n > 1 && path[n-1] == '/' {
		if !sequential {
			return false
		}
		end = n - 1
	}
	start := 1
	for i := 1; i <= end; i++ {
		if i < end && path[i] != '/' {
			if c := path[i]; c < 0x20 || c >= 0x7f {
				return false
			}
			continue
		}
		if seg := path[start:i]; seg == "" || seg == "." || seg == ".." {
			return n == 1 // "/" alone is the root
		}
		start = i + 1
	}
	return true
}

// pathError is validatePath's general check: nil, or why path is refused.
func pathError(path string, sequential bool) error {
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
	rest := path[1:]
	if sequential {
		rest = strings.TrimSuffix(rest, "/")
	}
	// strings.SplitSeq, not Split: every request checks its path, and the
	// slice was a lock operation's largest allocation of its own.
	for seg := range strings.SplitSeq(rest, "/") {
		switch seg {
		case "":
			return bad("empty segment (//)")
		case ".", "..":
			return bad("relative segment " + seg)
		}
	}
	for _, r := range path {
		// The characters ZooKeeper's PathUtils refuses.
		if r == 0 || r <= 0x1f || (r >= 0x7f && r <= 0x9f) ||
			(r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) || r > 0xffff {
			return bad(fmt.Sprintf("invalid character %U", r))
		}
	}
	return nil
}

// unimplemented reports whether err is a server's ZUNIMPLEMENTED (code
// -6), which go-zookeeper has no sentinel for: it says "unknown error:
// -6" (pinned against a real server by TestTTLCreateOnServersWithoutTTLIsUnsupported).
func unimplemented(err error) bool {
	return err != nil && err.Error() == "unknown error: -6"
}

// errNoTTL is a TTL create the servers refused: they run without extended
// types. No retry makes it, so it is said at once.
func errNoTTL(err error) error {
	return fmt.Errorf("%w: TTL nodes need zookeeper.extendedTypesEnabled=true on the servers: %w", zkrecipes.ErrUnsupported, err)
}
