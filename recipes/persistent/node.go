package persistent

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
)

// The recipes' names in their errors.
const (
	nodeRecipe = "persistent node"
	ttlRecipe  = "persistent ttl node"
)

// The errors of this package's own; those every recipe shares are the
// module's (zkrecipes.ErrClosed, zkrecipes.ErrSuspended, ...).
var (
	// ErrNotInPlace is Err's error while the node is not known to be in
	// place with the latest data; it also matches the reason
	// (zkrecipes.ErrSuspended, zkrecipes.ErrSessionLost,
	// zkrecipes.ErrNodeDeleted, ErrOtherOwner, or the error of a request
	// that failed).
	ErrNotInPlace = errors.New("node not in place")
	// ErrOtherOwner: an ephemeral node of another session is at the
	// node's path (a process that used the same path, or this one's own
	// previous session, not yet expired). The Node waits for it to go and
	// then makes its own; it never writes into another session's node.
	ErrOtherOwner = errors.New("path taken by an ephemeral node of another session")
)

// Status is where the node stands, as a Node's Subscribe delivers it.
type Status struct {
	// InPlace is true while the node exists, the Node's latest data (Set)
	// was written to it, and, for an ephemeral node, it belongs to the
	// client's current session, as last checked over the current link; a
	// persistent or TTL-mode node is never another session's ephemeral.
	// A write by someone else is not undone, as Curator's PersistentNode
	// (which only sets its watch again on a data change): the node keeps
	// that data, and stays in place, until the next Set or re-creation.
	InPlace bool
	// Path is the node's actual path (with the protected prefix and the
	// sequence number, if any); "" before it was first made.
	Path string
	// Czxid is the zxid that made the node in place (0 when not in
	// place): each re-creation has a higher one.
	Czxid int64
	// Owner is the session that owns the ephemeral node in place (0 for a
	// persistent node, or when not in place).
	Owner int64
	// Err says why the node is not in place (nil when it is). It wraps
	// the reason, as Err's error does.
	Err error
}

func (s Status) same(o Status) bool {
	if s.InPlace != o.InPlace || s.Path != o.Path || s.Czxid != o.Czxid || s.Owner != o.Owner {
		return false
	}
	if (s.Err == nil) != (o.Err == nil) {
		return false
	}
	return s.Err == nil || s.Err.Error() == o.Err.Error()
}

// Node is a Curator PersistentNode: a node that a process keeps in place
// from Start to Close, making it again whenever it goes (session loss,
// a delete by someone else). Its methods may be called from any
// goroutine; make one with New.
type Node struct {
	client     *framework.Client
	rt         *framework.Runtime // started and closed, the keeper's life
	path       string
	mode       framework.CreateMode // of the first create
	protected  bool
	ttl        time.Duration
	keepOnExit bool // a TTLNode's container: left for the server to reap

	creates sync.WaitGroup // creates sent at most once, abandoned ones too
	kick    chan struct{}
	// leaving is closed once the last stop's delete is on its way (or
	// handed to the client's background deletes): a new Start waits for
	// it, so that it never makes a node that delete would take.
	leaving chan struct{}

	feed framework.Feed[Status] // published under mu

	mu sync.Mutex
	// keeping: a keeper keeps the node, from the Start that began it
	// (still under way, or returned nil) to Close, or to that Start's
	// failure: Set and Wait go on while it does.
	keeping bool
	keeper  keeper // the running keeper's, for a Start that fails
	data    []byte
	gen     uint64 // counts Sets: data's generation
	written uint64 // the generation known to be on the node in place
	actual  string // the node's name once first made
	status  Status
	link    conn.Session // the link status was checked over
	// mine: the node at actual is this Node's (it made it, or found it
	// there and took it, as Curator does: a persistent node, or an
	// ephemeral of the current session); Close deletes only such a node.
	mine bool
	// doubt: a create of this Node's may have made the node without its
	// knowing (its reply was lost, or it was abandoned mid-flight); a
	// look settles it.
	doubt bool
	// owner: for an ephemeral node, the session of the node that is
	// this Node's, or of the create in doubt (0: none).
	owner    int64
	inflight chan struct{} // closed when the last create sent at most once is out of the client
	changed  chan struct{}
}

// New returns a Node at path with data: by default an ephemeral node at
// exactly path (Curator's CreateMode.EPHEMERAL); Protected, Sequential,
// Persistent and WithTTL choose another kind. Missing parents are made as
// containers, as Curator's default (useParentCreation). Nothing is sent
// before Start; data too large for the node, and bad options, are refused
// now.
func New(client *framework.Client, path string, data []byte, opts ...Option) (*Node, error) {
	// newNode refuses a bad option (cfg.Err) after a nil client and a bad
	// path, in the order of every recipe's checks.
	cfg, _ := framework.Configure(nodeRecipe, path, config{}, opts, Option.applyNode)
	return newNode(nodeRecipe, client, path, data, cfg)
}

func newNode(recipe string, client *framework.Client, path string, data []byte, cfg config) (*Node, error) {
	if client == nil {
		return nil, framework.RecipeErr(recipe, path, fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, framework.RecipeErr(recipe, path, err)
	}
	if err := cfg.Err(); err != nil {
		return nil, framework.RecipeErr(recipe, path, err)
	}
	n := &Node{
		client: client,
		rt:     framework.NewRuntime(client, recipe, path),
		path:   path,
		// A sequential name cannot be found again after a lost reply
		// unless it is protected: Sequential implies Protected.
		protected: cfg.protected || cfg.sequential,
		ttl:       cfg.ttl,
		kick:      make(chan struct{}, 1),
		changed:   make(chan struct{}),
		data:      bytes.Clone(data),
		gen:       1, // New's data; written is 0 until it is on the node
	}
	switch {
	case cfg.container:
		n.mode, n.keepOnExit = framework.Container, true
	case cfg.ttl > 0 && cfg.sequential:
		n.mode = framework.PersistentSequentialWithTTL
	case cfg.ttl > 0:
		n.mode = framework.PersistentWithTTL
	case cfg.persistent && cfg.sequential:
		n.mode = framework.PersistentSequential
	case cfg.persistent:
		n.mode = framework.Persistent
	case cfg.sequential:
		n.mode = framework.EphemeralSequential
	default:
		n.mode = framework.Ephemeral
	}
	if n.data == nil {
		n.data = []byte{}
	}
	if err := n.check("new", data); err != nil {
		return nil, n.err(err)
	}
	n.status = Status{Err: fmt.Errorf("%w: %w", ErrNotInPlace, zkrecipes.ErrNotStarted)}
	return n, nil
}

// check refuses data the server would refuse in the node's create (the
// stricter of its create and its set: the node is made again with it), for
// op ("new" or "set"), which the error names.
func (n *Node) check(op string, data []byte) error {
	err := n.client.CheckCreate(n.path, data, n.createOptions(true)...)
	if err == nil {
		return nil
	}
	var oe *framework.OpError
	if errors.As(err, &oe) {
		err = oe.Err // measured as a create; refused for the caller's op
	}
	return fmt.Errorf("%s: data of %d bytes: %w", op, len(data), err)
}

func (n *Node) ephemeral() bool {
	return n.mode == framework.Ephemeral || n.mode == framework.EphemeralSequential
}

// again is the mode of a re-creation: the name is known, so it is never
// sequential again.
func (n *Node) again() framework.CreateMode {
	switch n.mode {
	case framework.EphemeralSequential:
		return framework.Ephemeral
	case framework.PersistentSequential:
		return framework.Persistent
	case framework.PersistentSequentialWithTTL:
		return framework.PersistentWithTTL
	}
	return n.mode
}

// createOptions are the options of the first create (first) or of a
// re-creation at the name already made.
func (n *Node) createOptions(first bool) []framework.CreateOption {
	mode := n.mode
	if !first {
		mode = n.again()
	}
	opts := []framework.CreateOption{framework.WithMode(mode), framework.WithParentContainers()}
	if n.ttl > 0 {
		opts = append(opts, framework.WithTTL(n.ttl))
	}
	switch {
	case n.protected && first:
		opts = append(opts, framework.Protected())
	case n.protected:
		// The protected name carries a UUID of ours: nobody else makes it.
		opts = append(opts, framework.UniqueName())
	default:
		// At an exact name another client may also make: resent after a
		// lost reply, the create would fail with NodeExists on its own
		// node and could not tell it from another's. Sent at most once,
		// an unknown outcome is settled by looking (ownership is checked
		// next; Close looks too: see stop).
		opts = append(opts, framework.CreateAtMostOnce())
	}
	return opts
}

// usable says why n cannot be used: it is nil or a zero Node.
func (n *Node) usable() error {
	if n == nil || n.rt == nil {
		return framework.Invalid(nodeRecipe, "Node", "New")
	}
	return nil
}

func (n *Node) err(err error) error { return n.rt.Err(err) }

// Path returns the path the Node was made with (without the protected
// prefix or the sequence number: see ActualPath).
func (n *Node) Path() string {
	if n == nil {
		return ""
	}
	return n.path
}

// ActualPath returns the node's path as made (with the protected prefix and
// the sequence number, if any), as Curator's getActualPath; "" before it
// was first made.
func (n *Node) ActualPath() string {
	if n.usable() != nil {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.actual
}

// Data returns the data the node is kept with: the last Set's, or New's.
func (n *Node) Data() []byte {
	if n.usable() != nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return bytes.Clone(n.data)
}
