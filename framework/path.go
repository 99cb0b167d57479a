package framework

import (
	"strings"
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
