package framework

import "github.com/go-zookeeper/zk"

// ACLProvider chooses the ACL of each node the client creates, as Curator's
// ACLProvider. Paths are as the caller sees them (without the namespace).
type ACLProvider interface {
	// ACLForPath returns the ACL for a new node at path; nil means the
	// default.
	ACLForPath(path string) []zk.ACL
	// DefaultACL is the ACL of nodes ACLForPath has no opinion about.
	DefaultACL() []zk.ACL
}

// OpenACL gives every node world:anyone with all permissions (the default,
// as Curator's).
func OpenACL() ACLProvider { return FixedACL(zk.WorldACL(zk.PermAll)) }

// CreatorACL gives every node to the identities the client authenticated
// with (ZooKeeper's "auth" scheme), all permissions, nobody else any. The
// client must have credentials, for example framework.WithDigestAuth.
func CreatorACL() ACLProvider { return FixedACL(zk.AuthACL(zk.PermAll)) }

// FixedACL gives every node acl.
func FixedACL(acl []zk.ACL) ACLProvider { return fixedACL(acl) }

type fixedACL []zk.ACL

func (f fixedACL) ACLForPath(string) []zk.ACL { return f }
func (f fixedACL) DefaultACL() []zk.ACL       { return f }

// PathACL is an ACLProvider with a default and exact-path overrides.
type PathACL struct {
	Default []zk.ACL
	Paths   map[string][]zk.ACL
}

// ACLForPath returns the override for path, or nil.
func (p PathACL) ACLForPath(path string) []zk.ACL { return p.Paths[path] }

// DefaultACL returns p.Default.
func (p PathACL) DefaultACL() []zk.ACL { return p.Default }
