package framework

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/retry"
)

// CreateMode is the kind of node Create makes.
type CreateMode int

// The node kinds of ZooKeeper.
const (
	Persistent CreateMode = iota
	Ephemeral
	PersistentSequential
	EphemeralSequential
	// Container: a persistent node the server deletes once its last child is
	// gone.
	Container
	// PersistentWithTTL: deleted by the server when it has had no children
	// and no change for the TTL. Needs zookeeper.extendedTypesEnabled.
	PersistentWithTTL
	PersistentSequentialWithTTL
)

func (m CreateMode) sequential() bool {
	return m == PersistentSequential || m == EphemeralSequential || m == PersistentSequentialWithTTL
}

func (m CreateMode) ephemeral() bool { return m == Ephemeral || m == EphemeralSequential }

func (m CreateMode) ttl() bool { return m == PersistentWithTTL || m == PersistentSequentialWithTTL }

func (m CreateMode) flags() int32 {
	switch m {
	case Ephemeral:
		return zk.FlagEphemeral
	case PersistentSequential:
		return zk.FlagSequence
	case EphemeralSequential:
		return zk.FlagEphemeralSequential
	case Container:
		return zk.FlagContainer
	case PersistentWithTTL:
		return zk.FlagTTL
	case PersistentSequentialWithTTL:
		return zk.FlagPersistentSequentialWithTTL
	}
	return zk.FlagPersistent
}

// CreateOption modifies one Create. It has the module's one option shape
// (see Option).
type CreateOption interface{ applyCreate(*createOptions) }

type createOption func(*createOptions)

func (f createOption) applyCreate(o *createOptions) { f(o) }

type createOptions struct {
	mode       CreateMode
	ttl        time.Duration
	acl        []zk.ACL
	protected  bool
	parents    bool
	containers bool
	protectID  string
	// sent is the path a protected create sends (measureCreate).
	sent   string
	once   bool
	unique bool
}

// WithMode sets the kind of node (default Persistent).
func WithMode(m CreateMode) CreateOption { return modeOption(m) }

// modeOption is WithMode's option: a small integer in an interface costs
// no allocation per create.
type modeOption CreateMode

func (m modeOption) applyCreate(o *createOptions) { o.mode = CreateMode(m) }

// WithTTL sets the TTL of a PersistentWithTTL or PersistentSequentialWithTTL
// node.
func WithTTL(d time.Duration) CreateOption { return createOption(func(o *createOptions) { o.ttl = d }) }

// WithACL sets the node's ACL instead of the provider's.
func WithACL(acl []zk.ACL) CreateOption { return createOption(func(o *createOptions) { o.acl = acl }) }

// WithParents creates missing parents as persistent nodes, as Curator's
// creatingParentsIfNeeded.
func WithParents() CreateOption { return createOption(func(o *createOptions) { o.parents = true }) }

// WithParentContainers creates missing parents as container nodes, which the
// server removes once empty, as Curator's creatingParentContainersIfNeeded.
func WithParentContainers() CreateOption {
	return createOption(func(o *createOptions) { o.parents, o.containers = true, true })
}

// Protected names the node in Curator's protected form,
// "_c_<uuid>-<name>", so that a create whose reply was lost can find the
// node it made instead of making a second one, as Curator's withProtection.
// If the create finally fails, any node it may have left is deleted in the
// background. An ephemeral node found under another session (one that has
// expired) is deleted and created again.
func Protected() CreateOption { return createOption(func(o *createOptions) { o.protected = true }) }

// CreateAtMostOnce sends the create at most once: after a reply that may
// have been lost (the link dropped while it was on its way, the client
// closed, or ctx ended after it was handed to the connection) it is not
// sent again, and the error wraps zkrecipes.ErrOutcomeUnknown: the node may or may
// not have been made. Read to find out before writing again. Without it, a
// create resent after a lost reply fails with zk.ErrNodeExists though it
// was applied (or makes a second node, when sequential), and so cannot
// tell its own node from one another client made in between: a recipe
// whose answer depends on which it was needs this. Missing parents
// (WithParents) are made as usual, retried: only the node's own create is
// sent at most once. It cannot be combined with Protected, which finds
// its own node by name instead.
func CreateAtMostOnce() CreateOption { return createOption(func(o *createOptions) { o.once = true }) }

// UniqueName says that the path names a node nobody else makes (a fresh
// UUID in its name, say), so that a create can tell its own node from
// another's without Protected's prefix: a retry after a lost reply that
// finds the node exists takes it for its own and succeeds; and a create
// that finally fails after it may have been sent (a lost reply, ctx
// ending while it was in flight) leaves nothing behind: the node it may
// still make, even by an attempt that lands after Create returned, is
// deleted in the background once every attempt is out of the client
// (Drain waits for it). It cannot be combined with Protected, a
// sequential mode or CreateAtMostOnce.
func UniqueName() CreateOption { return createOption(func(o *createOptions) { o.unique = true }) }

// withProtectedID is Protected with a chosen UUID (dashed, 36 characters),
// for the enqueue, which must know it before the create. It is not
// exported: a create that loses its reply deletes every ephemeral with its
// prefix owned by another session, so a user who chose another process's
// id would delete that process's live lock node.
// sent is the protected path for id (protectedPath), which the enqueue
// has built already.
func withProtectedID(id, sent string) CreateOption {
	return createOption(func(o *createOptions) { o.protected, o.protectID, o.sent = true, id, sent })
}

// Create makes a node at path and returns its actual path (with the sequence
// number, and the protected prefix if any), without the namespace.
//
// A create that is retried after a lost reply may find that it had succeeded:
// without Protected, a non-sequential create then fails with zk.ErrNodeExists
// and a sequential one makes a second node, as in Curator.
//
// A request over the client's size limit (the data, the path as sent and
// the ACL together) fails with zkrecipes.ErrTooLarge, unsent (see
// WithMaxRequestSize and CheckCreate). A TTL mode on servers that refuse
// it (without zookeeper.extendedTypesEnabled=true) fails at once with an
// error wrapping zkrecipes.ErrUnsupported, having made nothing, not even the
// parents.
func (c *Client) Create(ctx context.Context, path string, data []byte, opts ...CreateOption) (string, error) {
	o := applyCreateOptions(opts)
	if err := c.check(ctx, "create", path, o.mode.sequential()); err != nil {
		return "", err
	}
	if err := o.validate(); err != nil {
		return "", opErr("create", path, err)
	}
	size, err := c.measureCreate(path, data, &o)
	if err != nil {
		return "", err
	}
	if err := c.ensureNamespace(ctx); err != nil {
		return "", err
	}
	var out string
	switch {
	case o.once:
		out, err = sendOnce(c, ctx, "create", path, func(z *zk.Conn) (string, error) {
			return c.createOnce(ctx, z, path, data, &o)
		})
	case o.unique:
		out, err = c.createUnique(ctx, path, data, &o, size)
	case !o.protected:
		out, err = doSized(c, ctx, "create", path, size, func(z *zk.Conn) (string, error) {
			return c.createOnce(ctx, z, path, data, &o)
		})
	default:
		out, err = c.createProtected(ctx, path, data, &o, size)
	}
	return out, err
}

func applyCreateOptions(opts []CreateOption) createOptions {
	var o createOptions
	for _, opt := range opts {
		if opt != nil {
			opt.applyCreate(&o)
		}
	}
	return o
}

func (o *createOptions) validate() error {
	switch {
	case o.mode < Persistent || o.mode > PersistentSequentialWithTTL:
		return fmt.Errorf("%w: create mode %d", zkrecipes.ErrInvalidArgument, o.mode)
	case o.mode.ttl() && o.ttl < time.Millisecond:
		return fmt.Errorf("%w: TTL mode needs a positive TTL, got %v", zkrecipes.ErrInvalidArgument, o.ttl)
	case !o.mode.ttl() && o.ttl != 0:
		return fmt.Errorf("%w: TTL given for mode %d", zkrecipes.ErrInvalidArgument, o.mode)
	case o.unique && (o.protected || o.once || o.mode.sequential()):
		return fmt.Errorf("%w: UniqueName with Protected, CreateAtMostOnce or a sequential mode", zkrecipes.ErrInvalidArgument)
	case o.once && o.protected:
		return fmt.Errorf("%w: CreateAtMostOnce with Protected: a protected create finds its own node after a lost reply", zkrecipes.ErrInvalidArgument)
	case o.protectID != "":
		if !isDashedUUID(o.protectID) {
			return fmt.Errorf("%w: protected id %q is not a dashed lowercase UUID", zkrecipes.ErrInvalidArgument, o.protectID)
		}
	}
	return nil
}

// createOnce sends one create, making parents first if it fails for lack of
// them.
func (c *Client) createOnce(ctx context.Context, z *zk.Conn, path string, data []byte, o *createOptions) (string, error) {
	for tries := 0; ; tries++ {
		full := c.ns.fixCreate(path, o.mode.sequential())
		acl := c.aclFor(path, o.acl)
		var out string
		var err error
		switch {
		case o.mode == Container:
			out, err = z.CreateContainer(full, data, zk.FlagContainer, acl)
		case o.mode.ttl():
			out, err = z.CreateTTL(full, data, o.mode.flags(), acl, o.ttl)
		default:
			out, err = z.Create(full, data, o.mode.flags(), acl)
		}
		// A container parent can be removed by the server between mkdirs and
		// the create; go round again rather than fail.
		if errors.Is(err, zk.ErrNoNode) && o.parents && tries < 3 {
			if perr := c.mkdirs(ctx, z, Parent(path), o.containers); perr != nil {
				// The create itself was answered (no parent): only the
				// parents' failed, and a create sent at most once may go
				// again.
				return "", unsent{perr}
			}
			continue
		}
		if err != nil {
			if o.mode.ttl() && unimplemented(err) {
				// Checked before the parent: nothing was made.
				return "", errNoTTL(err)
			}
			return "", err
		}
		return c.ns.unfix(out), nil
	}
}

// mkdirs creates every missing node on the way to dir, the namespace's own
// nodes included: someone may have deleted the namespace since it was made.
// Namespace nodes are persistent with the default ACL; the caller's get the
// provider's ACL and are containers if asked.
func (c *Client) mkdirs(ctx context.Context, z *zk.Conn, dir string, containers bool) error {
	return c.mkdirsFull(ctx, z, c.ns.fix(dir), containers)
}

// mkdirsFull is mkdirs for a full path, namespace included. It works from
// the bottom up: under a lock per entity only the entity's own directory is
// usually missing (the server reaps empty containers), and each existing
// ancestor made from the root down cost a failed create, a write the server
// orders, one after the other.
func (c *Client) mkdirsFull(ctx context.Context, z *zk.Conn, full string, containers bool) error {
	if full == "/" {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err := c.mkdir(z, full, containers)
	if errors.Is(err, zk.ErrNoNode) {
		if err = c.mkdirsFull(ctx, z, path.Dir(full), containers); err != nil {
			return err
		}
		err = c.mkdir(z, full, containers)
	}
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	return nil
}

// mkdir makes the one directory p (a full path, namespace included): above
// the namespace a persistent node with the default ACL, as the namespace's
// own parents; within it a container or a persistent node.
func (c *Client) mkdir(z *zk.Conn, p string, containers bool) error {
	var err error
	switch inNamespace := len(p) > len(c.ns); {
	case !inNamespace:
		_, err = z.Create(p, nil, zk.FlagPersistent, c.acl.DefaultACL())
	case containers:
		_, err = z.CreateContainer(p, nil, zk.FlagContainer, c.aclFor(c.ns.unfix(p), nil))
	default:
		_, err = z.Create(p, nil, zk.FlagPersistent, c.aclFor(c.ns.unfix(p), nil))
	}
	return err
}

// ensureNamespace creates the namespace node once, before the first write.
func (c *Client) ensureNamespace(ctx context.Context) error {
	if c.ns == "" {
		return nil
	}
	c.nsMu.Lock()
	defer c.nsMu.Unlock()
	if c.nsReady {
		return nil
	}
	err := retry.Do(ctx, c.retry, func(ctx context.Context) error {
		_, err := callValue(c, ctx, func() (struct{}, error) {
			z := c.zk()
			segs := strings.Split(string(c.ns)[1:], "/")
			p := ""
			for _, s := range segs {
				p += "/" + s
				if _, err := z.Create(p, nil, zk.FlagPersistent, c.acl.DefaultACL()); err != nil && !errors.Is(err, zk.ErrNodeExists) {
					return struct{}{}, err
				}
			}
			return struct{}{}, nil
		})
		return err
	})
	if err != nil {
		return opErr("create namespace", string(c.ns), c.closedErr(err))
	}
	c.nsReady = true
	return nil
}

// createProtected is Curator's protected create: on a lost reply, look for
// our node by its unique prefix before trying again (unless the request,
// size bytes, is sent at most once: see sentOnce).
func (c *Client) createProtected(ctx context.Context, path string, data []byte, o *createOptions, size int) (string, error) {
	id := o.protectID // set by measureCreate
	parent := Parent(path)
	prefix := protectedName(id, "")
	ppath := o.sent
	if err := validatePath(ppath, o.mode.sequential()); err != nil {
		return "", opErr("create", path, err)
	}

	if err := ctx.Err(); err != nil && size > DefaultMaxRequestSize {
		return "", opErr("create", path, err) // unsent: not an unknown outcome
	}
	var out string
	uncertain := false          // a create may have been applied without our knowing
	var inflight sync.WaitGroup // attempts still inside go-zookeeper, abandoned ones too
	err := retry.Do(ctx, c.retry, func(ctx context.Context) error {
		look := uncertain // copied: an abandoned attempt must not read it later
		start := time.Now()
		p, err := callTracked(c, ctx, &inflight, func() (string, error) {
			z := c.zk()
			if look {
				found, err := c.findProtected(z, parent, prefix, o.mode.ephemeral())
				if err != nil || found != "" {
					return found, err
				}
			}
			// An attempt whose caller gave up (during the look above, say)
			// need not create: that would only give the cleanup a node to
			// delete. One that is past this point may still land after the
			// caller returns; the cleanup waits for it (see below).
			if err := ctx.Err(); err != nil {
				return "", err
			}
			return c.createOnce(ctx, z, ppath, data, o)
		})
		c.metrics.Request(ctx, metrics.OpCreate, time.Since(start), err)
		if err != nil {
			if retry.Retryable(err) {
				uncertain = true
			}
			return err
		}
		out = p
		return nil
	}, sentOnce(size))
	if err != nil {
		// A create abandoned mid-flight (ctx ended during the call) may land
		// after we return: that is uncertain too.
		if uncertain || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, zk.ErrClosing) {
			// The cleanup looks only once every attempt is out of
			// go-zookeeper: an abandoned create still queued there would
			// otherwise land after the look and stay, an orphan of a live
			// session that blocks every waiter behind it (found by the
			// chaos suite: a create retried across a server restart).
			c.deleter.enqueue(deleteJob{parent: parent, prefix: prefix, after: c.whenDone(&inflight)})
		}
		return "", opErr("create", path, unanswered(size, c.closedErr(err)))
	}
	return out, nil
}

// createUnique is Create of a path only this call makes (UniqueName): a
// node found there after a lost reply is its own, and one an abandoned
// attempt may still make is deleted once every attempt is out.
func (c *Client) createUnique(ctx context.Context, path string, data []byte, o *createOptions, size int) (string, error) {
	if err := ctx.Err(); err != nil && size > DefaultMaxRequestSize {
		return "", opErr("create", path, err) // unsent: not an unknown outcome
	}
	var out string
	uncertain := false          // a create may have been applied without our knowing
	var inflight sync.WaitGroup // attempts still inside go-zookeeper, abandoned ones too
	err := retry.Do(ctx, c.retry, func(ctx context.Context) error {
		retried := uncertain
		start := time.Now()
		p, err := callTracked(c, ctx, &inflight, func() (string, error) {
			if err := ctx.Err(); err != nil {
				return "", err // given up on before it was sent
			}
			return c.createOnce(ctx, c.zk(), path, data, o)
		})
		c.metrics.Request(ctx, metrics.OpCreate, time.Since(start), err)
		switch {
		case err == nil:
			out = p
			return nil
		case retried && errors.Is(err, zk.ErrNodeExists):
			// Nobody else makes this name: an earlier attempt of ours did,
			// and its reply was lost.
			out = path
			return nil
		case retry.Retryable(err):
			uncertain = true
		}
		return err
	}, sentOnce(size))
	if err != nil {
		if uncertain || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, zk.ErrClosing) {
			// As a protected create's cleanup, it waits until every attempt
			// is out of go-zookeeper: an abandoned create still queued there
			// would land after the delete and stay (found by the chaos
			// suite: a double barrier's member, created across a server
			// restart after its Enter gave up).
			c.deleter.enqueue(deleteJob{path: path, version: -1, after: c.whenDone(&inflight)})
		}
		return "", opErr("create", path, unanswered(size, c.closedErr(err)))
	}
	return out, nil
}

// findProtected looks under parent for the child with our prefix. Ephemeral
// ones owned by another session belong to a session of ours that has expired:
// they are deleted, and only one owned by the current session counts.
//
// It syncs first. It runs after a lost reply, typically on a new link, maybe
// to another server: the create went out through the old one, and our
// last-seen zxid (which a server must have reached to take us) does not
// cover it, since its reply never came. A follower that has not applied it
// yet would list the parent without our node; we would make a second one,
// and the first, an ephemeral of our own live session, would sit ahead of
// us in the queue until the session ends. Sync makes the server catch up
// with the leader before the list.
func (c *Client) findProtected(z *zk.Conn, parent, prefix string, ephemeral bool) (string, error) {
	if _, err := z.Sync(c.ns.fix(parent)); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return "", err
	}
	kids, _, err := z.Children(c.ns.fix(parent))
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	found := ""
	for _, k := range kids {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		p := Join(parent, k)
		if !ephemeral {
			return p, nil
		}
		ok, st, err := z.Exists(c.ns.fix(p))
		if err != nil {
			return "", err
		}
		switch {
		case !ok:
		case st.EphemeralOwner == z.SessionID():
			found = p
		default:
			if err := z.Delete(c.ns.fix(p), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return "", err
			}
		}
	}
	return found, nil
}
