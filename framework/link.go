package framework

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/fwlink"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
)

// wire is the connection's plumbing: the raw go-zookeeper client and the
// wire traces, which only this package may use.
func (c *Client) wire() connlink.Conn { return connlink.Of(c.conn) }

// zk is the go-zookeeper client of the current session.
func (c *Client) zk() *zk.Conn { return c.wire().ZK() }

// plumbing is what the engine and the recipes reach through
// internal/fwlink. None of it is exported: each piece can break a recipe's
// invariants in a user's hands (a delete bound to the wrong session, a
// queue node nobody follows).
type plumbing struct{ c *Client }

func (p plumbing) Enqueue(ctx context.Context, path string, data []byte) (*fwlink.Queued, error) {
	return p.c.enqueue(ctx, path, data)
}
func (p plumbing) DeleteLater(path string, owner int64) error { return p.c.deleteLater(path, owner) }
func (p plumbing) DeleteOwn(ctx context.Context, path string, owner int64) error {
	return p.c.deleteOwn(ctx, path, owner)
}
func (p plumbing) LossSignal(s conn.Session) <-chan struct{} { return p.c.lossSignal(s) }
func (p plumbing) Metrics() *metrics.Client                  { return p.c.metrics }
func (p plumbing) OnClose(f func()) (remove func())          { return p.c.onClose(f) }
func (p plumbing) Closing() <-chan struct{}                  { return p.c.quit }
func (p plumbing) Conn() *conn.Conn                          { return p.c.conn }
func (p plumbing) GetWRaw(ctx context.Context, path string) (<-chan zk.Event, *zk.Stat, error) {
	return p.c.getWRaw(ctx, path)
}
func (p plumbing) Heads() *fwlink.Heads { return &p.c.heads }
func (p plumbing) Go(f func()) bool     { return p.c.spawn(f) }
func (p plumbing) MultiOnce(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	return p.c.multiOnce(ctx, ops...)
}

func init() {
	fwlink.Register(func(c any) fwlink.Client { return plumbing{c.(*Client)} })
}
