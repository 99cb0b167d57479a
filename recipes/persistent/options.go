package persistent

import (
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
)

// Option configures a Node (New).
type Option interface{ applyNode(*config) }

type option func(*config)

func (f option) applyNode(c *config) { f(c) }

type config struct {
	framework.Settings
	protected  bool
	sequential bool
	persistent bool
	container  bool // a TTLNode's parent
	ttl        time.Duration
}

// Protected names the node in Curator's protected form,
// "_c_<uuid>-<name>", as Curator's useProtection: a create whose reply
// was lost finds its node instead of making a second one. The node keeps
// its name (the same UUID, and the same sequence number if Sequential)
// each time it is made again.
func Protected() Option {
	return option(func(c *config) { c.protected = true })
}

// Sequential makes the node sequential the first time: the server appends
// a 10-digit sequence number to its name. When the node is made again
// (after a session loss, or a delete by someone else) it keeps the name it
// got, as Curator's PersistentNode does. Sequential implies Protected:
// without the protected prefix, a create whose reply was lost could not
// find its node, and would make a second one while the first stayed (as
// Curator's PersistentNode without useProtection does).
func Sequential() Option {
	return option(func(c *config) { c.sequential = true })
}

// Persistent makes a persistent node instead of an ephemeral one
// (Curator's CreateMode.PERSISTENT): it outlives the session, and is made
// again only if someone deletes it. Close deletes it, as Curator's close
// does.
func Persistent() Option {
	return option(func(c *config) { c.persistent = true })
}

// WithTTL makes a persistent node with a time to live (Curator's
// CreateMode.PERSISTENT_WITH_TTL with the ttl argument): the server
// deletes it once it has had no change and no children for d, and the
// Node makes it again. The servers need zookeeper.extendedTypesEnabled=true:
// without it, Start fails at once with an error wrapping
// zkrecipes.ErrUnsupported, and nothing is made. It implies Persistent. d
// must be positive.
func WithTTL(d time.Duration) Option {
	return option(func(c *config) {
		if d <= 0 {
			c.Invalidf("TTL %v is not positive", d)
		}
		c.persistent = true
		c.ttl = d
	})
}

// TTLOption configures a TTLNode (NewTTL).
type TTLOption interface{ applyTTL(*ttlConfig) }

type ttlOption func(*ttlConfig)

func (f ttlOption) applyTTL(c *ttlConfig) { f(c) }

type ttlConfig struct {
	framework.Settings
	child  string
	factor int
}

// WithChildName sets the name of the TTL child a TTLNode touches (default
// "touch", Curator's DEFAULT_CHILD_NODE_NAME). It must be one path
// segment.
func WithChildName(name string) TTLOption {
	return ttlOption(func(c *ttlConfig) { c.child = name })
}

// WithTouchFactor sets how often a TTLNode touches its child: every
// TTL/factor (default 2, Curator's DEFAULT_TOUCH_SCHEDULE_FACTOR). It must
// be at least 1.
func WithTouchFactor(factor int) TTLOption {
	return ttlOption(func(c *ttlConfig) {
		if factor < 1 {
			c.Invalidf("touch factor %d is below 1", factor)
		}
		c.factor = factor
	})
}
