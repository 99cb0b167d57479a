package main

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// startCache starts a cache of lc's path in shape and returns it, or the
// status to exit with. The caller closes it.
func (lc *lookCommand) startCache(path string, shape cache.Shape, opts ...cache.Option) (*cache.Cache, int, bool) {
	c, err := cache.New(lc.client, path, shape, opts...)
	if err != nil {
		lc.log.printf("%v", err)
		return nil, exitUsage, false
	}
	if err := c.Start(lc.sig.ctx); err != nil {
		_ = c.Close()
		return nil, lc.sig.failed(lc.log, err), false
	}
	return c, 0, true
}

// follow hands each event of c's view to show (Snapshot first) until a
// signal ends it, and says on stderr when the view may be stale and when
// it is current again, as zkr ls --watch. It returns the status to exit
// with: a signal's, or 125 when the cache ends, or when show fails
// (stdout closed: its reader is gone).
func (lc *lookCommand) follow(c *cache.Cache, what string, show func(cache.Event) error) int {
	sub := c.Subscribe()
	defer sub.Close()
	view := &staleView{log: lc.log, what: what}
	for {
		select {
		case <-lc.sig.ctx.Done():
			s, _ := lc.sig.received()
			return signalCode(s)
		case ev, open := <-sub.Changes():
			if !open {
				err := c.Err()
				if err == nil {
					err = errors.New("the view ended")
				}
				return lc.sig.failed(lc.log, err)
			}
			switch ev.Type {
			case cache.Stale:
				view.stale(staleReason(ev.Err, what))
			case cache.Current:
				view.current()
			}
			if err := show(ev); err != nil {
				return lc.sig.failed(lc.log, err)
			}
		}
	}
}

// staleReason is what the stale note says for the cache's reason, in the
// words of zkr ls --watch.
func staleReason(err error, what string) string {
	switch {
	case errors.Is(err, zkrecipes.ErrSessionLost):
		return "session lost: " + what + " shown may be stale until a new session looks again"
	case errors.Is(err, zkrecipes.ErrSuspended):
		return "link to ZooKeeper down: " + what + " shown may be stale"
	}
	return fmt.Sprintf("%s shown may be stale (%v)", what, err)
}

// nodeJSON is one node in -o json.
type nodeJSON struct {
	Path string `json:"path"`
	// Data is the node's data when it is UTF-8 text; else DataBase64 is.
	Data       *string   `json:"data,omitempty"`
	DataBase64 []byte    `json:"data_base64,omitempty"`
	Stat       *statJSON `json:"stat"`
}

// statJSON is the part of a Stat that says which state of a node this is,
// and whose.
type statJSON struct {
	Czxid          int64  `json:"czxid"`
	Mzxid          int64  `json:"mzxid"`
	Version        int32  `json:"version"`
	EphemeralOwner string `json:"ephemeral_owner,omitempty"`
	Ctime          string `json:"ctime"`
	Mtime          string `json:"mtime"`
	DataLength     int32  `json:"data_length"`
	NumChildren    int32  `json:"num_children"`
}

func newNodeJSON(n cache.Node) nodeJSON {
	out := nodeJSON{Path: n.Path, Stat: newStatJSON(n.Stat)}
	if utf8.Valid(n.Data) {
		s := string(n.Data)
		out.Data = &s
	} else {
		out.DataBase64 = n.Data
	}
	return out
}

func newStatJSON(st zk.Stat) *statJSON {
	out := &statJSON{Czxid: st.Czxid, Mzxid: st.Mzxid, Version: st.Version,
		Ctime: msTime(st.Ctime), Mtime: msTime(st.Mtime), DataLength: st.DataLength, NumChildren: st.NumChildren}
	if st.EphemeralOwner != 0 {
		out.EphemeralOwner = fmt.Sprintf("0x%x", st.EphemeralOwner)
	}
	return out
}

// msTime is a ZooKeeper time (ms since the epoch) in RFC 3339.
func msTime(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

// now is the time an event was seen, for -o json.
func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }
