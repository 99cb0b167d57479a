package persistent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// TTLNode is a Curator PersistentTtlNode: a container node at its path,
// kept in place like a Node, with a child ("touch") made with a TTL and
// touched every TTL/2. While the process lives the child is touched and
// the container stays; once it stops, the server deletes the child after
// the TTL (it had no change), and then the empty container. The servers
// need zookeeper.extendedTypesEnabled=true for the TTL child.
type TTLNode struct {
	*Node
	child string
	ttl   time.Duration
	every time.Duration
	touch []byte
}

// NewTTL returns a TTLNode at path with data and the given TTL (at least
// a millisecond). Nothing is sent before Start.
func NewTTL(client *framework.Client, path string, data []byte, ttl time.Duration, opts ...TTLOption) (*TTLNode, error) {
	cfg, cfgErr := framework.Configure(ttlRecipe, path, ttlConfig{child: "touch", factor: 2}, opts, TTLOption.applyTTL)
	node, err := newNode(ttlRecipe, client, path, data, config{container: true})
	if err != nil {
		return nil, err
	}
	switch {
	case cfgErr != nil:
		return nil, cfgErr
	case ttl < time.Millisecond:
		return nil, node.err(fmt.Errorf("%w: TTL %v is below a millisecond", zkrecipes.ErrInvalidArgument, ttl))
	case cfg.child == "" || strings.Contains(cfg.child, "/"):
		return nil, node.err(fmt.Errorf("%w: child name %q is not one path segment", zkrecipes.ErrInvalidArgument, cfg.child))
	}
	n := &TTLNode{
		Node:  node,
		child: framework.Join(path, cfg.child),
		ttl:   ttl,
		every: max(ttl/time.Duration(cfg.factor), time.Millisecond),
		// Curator's data for a node made without any: the local address.
		touch: []byte(framework.DefaultParticipantID()),
	}
	if err := framework.ValidatePath(n.child); err != nil {
		return nil, node.err(fmt.Errorf("%w: child name %q: %w", zkrecipes.ErrInvalidArgument, cfg.child, err))
	}
	if err := client.CheckCreate(n.child, n.touch, framework.WithMode(framework.PersistentWithTTL), framework.WithTTL(ttl)); err != nil {
		return nil, node.err(err)
	}
	return n, nil
}

// usable says why n cannot be used: it is nil or a zero TTLNode.
func (n *TTLNode) usable() error {
	if n == nil || n.Node == nil || n.Node.rt == nil {
		return framework.Invalid(ttlRecipe, "TTLNode", "NewTTL")
	}
	return nil
}

// The methods a TTLNode has from its Node, each with the check that a nil
// or zero TTLNode gets an error (or a zero value), not a panic.

// Path returns the container's path; "" for a nil TTLNode.
func (n *TTLNode) Path() string {
	if n.usable() != nil {
		return ""
	}
	return n.Node.Path()
}

// ActualPath returns the container's path once made; "" before, and for
// a nil TTLNode.
func (n *TTLNode) ActualPath() string {
	if n.usable() != nil {
		return ""
	}
	return n.Node.ActualPath()
}

// Data returns the container's data (see Node.Data); nil for a nil
// TTLNode.
func (n *TTLNode) Data() []byte {
	if n.usable() != nil {
		return nil
	}
	return n.Node.Data()
}

// Set makes data the container's data (see Node.Set).
func (n *TTLNode) Set(ctx context.Context, data []byte) error {
	if err := n.usable(); err != nil {
		return err
	}
	return n.Node.Set(ctx, data)
}

// Wait waits until the container is in place (see Node.Wait).
func (n *TTLNode) Wait(ctx context.Context) error {
	if err := n.usable(); err != nil {
		return err
	}
	return n.Node.Wait(ctx)
}

// Status returns where the container stands now (see Node.Status).
func (n *TTLNode) Status() Status {
	if err := n.usable(); err != nil {
		return Status{Err: err}
	}
	return n.Node.Status()
}

// Err is nil while the container is in place (see Node.Err).
func (n *TTLNode) Err() error {
	if err := n.usable(); err != nil {
		return err
	}
	return n.Node.Err()
}

// Subscribe returns a subscription to the container's Status (see
// Node.Subscribe, and docs/vocabulary.md for a reader that falls behind);
// for a nil TTLNode, one whose channel is closed.
func (n *TTLNode) Subscribe() *framework.Subscription[Status] {
	if n.usable() != nil {
		var f framework.Feed[Status]
		f.End(nil)
		return f.Subscribe()
	}
	return n.Node.Subscribe()
}

// Start makes the container (and its missing parents) and its TTL child,
// and keeps touching the child every TTL/factor until Close. It returns
// once the container is in place, or with ctx's error. Servers that refuse
// TTL nodes fail it at once with an error wrapping
// zkrecipes.ErrUnsupported, and nothing is made.
func (n *TTLNode) Start(ctx context.Context) error {
	if err := n.usable(); err != nil {
		return err
	}
	return n.rt.Start(ctx, n.begin)
}

// begin makes the TTL child, then the container's Node, then starts the
// toucher beside its keeper (the Node's Runtime is the TTLNode's: Close
// ends both); if the toucher cannot start, it undoes the Node's begin.
func (n *TTLNode) begin(ctx context.Context) error {
	if err := n.touchFirst(ctx); err != nil {
		return err
	}
	if err := n.Node.begin(ctx); err != nil {
		return err
	}
	if !n.rt.Go(n.toucher) {
		n.Node.undo()
		return zkrecipes.ErrClosed
	}
	return nil
}

// touchFirst makes the TTL child before the container's Node starts, and
// the container with it, as the child's parent. Servers that refuse TTL
// nodes refuse the child before they make anything (ZooKeeper checks a
// create's kind before its parent), so nothing is left behind, where a
// container made first would stay for good: the server reaps only a
// container that has had a child.
func (n *TTLNode) touchFirst(ctx context.Context) error {
	_, err := n.client.Create(ctx, n.child, n.touch, framework.WithMode(framework.PersistentWithTTL),
		framework.WithTTL(n.ttl), framework.WithParentContainers())
	if errors.Is(err, zk.ErrNodeExists) {
		return nil // another's, or this one's before a restart: touched next
	}
	return err
}

// toucher touches the child at once (beyond Curator, which waits a
// period: a container that never had a child is not reaped), then every
// period until life ends.
func (n *TTLNode) toucher(life context.Context) {
	t := time.NewTicker(n.every)
	defer t.Stop()
	for {
		n.touchOnce(life)
		select {
		case <-t.C:
		case <-life.Done():
			return
		case <-n.client.Done():
			return
		}
	}
}

func (n *TTLNode) touchOnce(life context.Context) {
	c := n.client
	ctx, cancel := context.WithTimeout(life, n.every)
	defer cancel()
	_, err := c.Set(ctx, n.child, n.touch, -1)
	if errors.Is(err, zk.ErrNoNode) {
		// No parents: a missing container is the Node's to make again;
		// the next touch makes the child under it.
		_, err = c.Create(ctx, n.child, n.touch, framework.WithMode(framework.PersistentWithTTL), framework.WithTTL(n.ttl))
		if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode) {
			err = nil
		}
	}
	if err != nil && life.Err() == nil {
		c.Logger().Debug("zookeeper persistent ttl node: touch failed", "path", n.child, "err", err)
	}
}

// Close stops touching the child and keeping the container in place; it
// deletes nothing, as Curator's: the server deletes the child once its TTL
// has passed without a touch, then the empty container. It is idempotent.
func (n *TTLNode) Close() error {
	if err := n.usable(); err != nil {
		return err
	}
	return n.Node.Close()
}
