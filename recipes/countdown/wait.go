package countdown

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"
)

// Wait waits until the latch is open (Redisson's await): its count is
// zero, or there is no latch at path (never set, finished and deleted, or
// deleted by someone else, which opens it as Redisson's delete does), or
// the latch it found was replaced by another at the same path. It returns
// nil then, an error wrapping ctx's if ctx ends first, or one wrapping
// zkrecipes.ErrClosed after Close. It waits through cut links, session
// expiries and server restarts.
func (l *Countdown) Wait(ctx context.Context) error {
	ctx, done, err := l.begin(ctx)
	if err != nil {
		return err
	}
	defer done()
	p := l.rt.Pacer()
	if err := l.synced(ctx, p); err != nil {
		return l.fail(err, false)
	}
	var czxid int64
	for {
		opened, err := l.waitOnce(ctx, &czxid)
		switch {
		case opened:
			return nil
		case err == nil:
			p.Reset()
		case !l.waitOut(ctx, p, err):
			return l.fail(err, false)
		}
	}
}

// waitOnce reads the latch with a watch and, unless it is open, waits for
// the watch (or ctx). czxid is the latch being waited for, 0 before the first
// read.
func (l *Countdown) waitOnce(ctx context.Context, czxid *int64) (bool, error) {
	// The watch belongs to wctx: ended on return, it leaves nothing behind.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	data, st, watch, err := l.client.GetW(wctx, l.path)
	if errors.Is(err, zk.ErrNoNode) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if *czxid == 0 {
		*czxid = st.Czxid
	} else if st.Czxid != *czxid {
		return true, nil // ours finished and a new latch was set
	}
	n, err := decode(data)
	if err != nil {
		return false, err
	}
	if n <= 0 {
		return true, nil
	}
	select {
	case <-watch: // counted down, deleted, or the watch ended: read again
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
