package framework

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"
)

var (
	// ErrClosed is returned by every operation after Close.
	ErrClosed = errors.New("framework: client closed")
	// ErrInvalidPath is wrapped by errors about a malformed path. It also
	// matches zk.ErrInvalidPath.
	ErrInvalidPath = fmt.Errorf("framework: %w", zk.ErrInvalidPath)
	// ErrInvalidArgument is wrapped by errors about other bad arguments
	// (negative TTL, nil option values, ...), reported before anything is
	// sent.
	ErrInvalidArgument = errors.New("framework: invalid argument")
	// ErrDeferred is joined to the error of a guaranteed delete that could not
	// finish now: the client goes on with it in the background.
	ErrDeferred = errors.New("framework: delete continues in the background")
)

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

// validatePath is ValidatePath where a sequential create may end in "/"
// (the server appends the sequence number).
func validatePath(path string, sequential bool) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrInvalidPath, path, why) }
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
		// The characters ZooKeeper's PathUtils refuses.
		if r == 0 || r <= 0x1f || (r >= 0x7f && r <= 0x9f) ||
			(r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) || r > 0xffff {
			return bad(fmt.Sprintf("invalid character %U", r))
		}
	}
	return nil
}
