package framework

import (
	"crypto/rand"
	"strings"

	"github.com/google/uuid"
)

// Parent returns the parent of path ("/" for a top-level node and for "/").
func Parent(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

// Base returns the last segment of path.
func Base(path string) string { return path[strings.LastIndexByte(path, '/')+1:] }

// Join joins a parent path and a child name.
func Join(parent, child string) string {
	if parent == "/" {
		return "/" + child
	}
	return parent + "/" + child
}

// ProtectedPrefix is the start of Curator's protected node names:
// "_c_" + a dashed UUID + "-".
const ProtectedPrefix = "_c_"

// protectedName returns Curator's protected form of a node name.
func protectedName(id, name string) string { return ProtectedPrefix + id + "-" + name }

// protectedPath returns path with its last segment in the protected form
// for id, built in one allocation: it is on every lock's way in.
func protectedPath(path, id string) string {
	parent := Parent(path)
	if parent == "/" {
		parent = ""
	}
	return parent + "/" + ProtectedPrefix + id + "-" + Base(path)
}

// newProtectedID is a random (version 4) UUID in its dashed lowercase
// form, as Curator's protected names carry. Read straight into a value on
// the stack, it costs one allocation, the string; uuid.NewString, through
// its io.Reader, cost two.
func newProtectedID() string {
	var u uuid.UUID
	if _, err := rand.Read(u[:]); err != nil {
		// crypto/rand.Read does not fail on the systems Go supports (it
		// crashes the program instead); uuid's own reader is the fallback.
		return uuid.NewString()
	}
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // the RFC 4122 variant
	return u.String()
}

// isDashedUUID reports whether s is a UUID in its dashed lowercase form
// (what uuid.UUID.String returns), without allocating.
func isDashedUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

// IsProtected reports whether a node name has Curator's protected prefix
// ("_c_" + 36-character UUID + "-").
func IsProtected(name string) bool {
	return len(name) >= 40 && strings.HasPrefix(name, ProtectedPrefix) && name[39] == '-'
}

// StripProtected returns a node name without Curator's protected prefix.
func StripProtected(name string) string {
	if IsProtected(name) {
		return name[40:]
	}
	return name
}

// namespace maps between the caller's paths and the server's.
type namespace string // "" or "/a/b"

func (ns namespace) fix(path string) string {
	if ns == "" {
		return path
	}
	if path == "/" {
		return string(ns)
	}
	return string(ns) + path
}

// fixCreate is fix for a create, where a sequential create at "/" names a
// child of the root: under a namespace, a child of the namespace node.
func (ns namespace) fixCreate(path string, sequential bool) string {
	if sequential && path == "/" && ns != "" {
		return string(ns) + "/"
	}
	return ns.fix(path)
}

// fixedLen is the length of fixCreate(path, sequential), without making
// it: every write is measured before it is sent.
func (ns namespace) fixedLen(path string, sequential bool) int {
	switch {
	case ns == "":
		return len(path)
	case path == "/" && sequential:
		return len(ns) + 1
	case path == "/":
		return len(ns)
	}
	return len(ns) + len(path)
}

func (ns namespace) unfix(path string) string {
	if ns == "" {
		return path
	}
	if path == string(ns) {
		return "/"
	}
	if rest, ok := strings.CutPrefix(path, string(ns)+"/"); ok {
		return "/" + rest
	}
	return path
}
