package cache

import (
	"fmt"
	"math"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// AnyDepth is the depth of a Tree without a bound: every node under the
// path, however deep.
const AnyDepth = math.MaxInt32

// DefaultBufferSize is how many events a subscription holds for a reader
// that falls behind, unless WithBufferSize says otherwise.
const DefaultBufferSize = 1024

type shapeKind int

const (
	shapeNode shapeKind = iota + 1
	shapeChildren
	shapeTree
)

// Shape is what a Cache follows under its path: one node (Single), its
// children (Children), or a subtree to a depth (Tree). The zero Shape is
// none of them: New refuses it.
type Shape struct {
	kind  shapeKind
	depth int
}

// Single follows one node, the path itself, as Curator's NodeCache (and
// CuratorCache's SINGLE_NODE_CACHE): the view is that node, or nothing
// while it does not exist.
func Single() Shape { return Shape{kind: shapeNode, depth: 0} }

// Children follows the children of the path, not the path itself, as
// Curator's PathChildrenCache: the view is the children, none while the
// path does not exist.
func Children() Shape { return Shape{kind: shapeChildren, depth: 1} }

// Tree follows the path and the nodes under it down to depth levels
// below it, as Curator's TreeCache with maxDepth (and CuratorCache, with
// AnyDepth): Tree(0) is the path alone, Tree(1) the path and its
// children. depth must not be negative.
func Tree(depth int) Shape { return Shape{kind: shapeTree, depth: depth} }

// String names the shape, as in errors and logs.
func (s Shape) String() string {
	switch s.kind {
	case shapeNode:
		return "single node"
	case shapeChildren:
		return "children"
	case shapeTree:
		if s.depth == AnyDepth {
			return "tree"
		}
		return fmt.Sprintf("tree to depth %d", s.depth)
	}
	return "no shape"
}

func (s Shape) check() error {
	switch {
	case s.kind == 0:
		return fmt.Errorf("%w: the zero Shape: use Single(), Children() or Tree(depth)", zkrecipes.ErrInvalidArgument)
	case s.depth < 0:
		return fmt.Errorf("%w: depth %d: must be 0 or more", zkrecipes.ErrInvalidArgument, s.depth)
	}
	return nil
}

// Option configures a Cache (New). It has the module's one option shape:
// an option of another recipe does not compile here.
type Option interface{ applyCache(*config) }

type option func(*config)

func (f option) applyCache(c *config) { f(c) }

type config struct {
	framework.Settings
	buffer   int
	withData bool
}

// WithBufferSize sets how many events each subscription holds for a reader
// that falls behind (default DefaultBufferSize; at least 1). A reader that
// lets more pile up loses them, and gets one Overflow event in their place
// (see Subscribe).
func WithBufferSize(n int) Option {
	return option(func(c *config) {
		if n < 1 {
			c.Invalidf("buffer size %d: must be 1 or more", n)
		}
		c.buffer = n
	})
}

// WithoutData keeps each node's Stat and not its data, as Curator's
// caches with cacheData false: Node.Data is nil everywhere, and the cache
// costs the memory of the Stats and paths only. A change of the data is
// still an event (its Stat changes).
func WithoutData() Option {
	return option(func(c *config) { c.withData = false })
}
