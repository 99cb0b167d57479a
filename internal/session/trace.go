package session

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// tracer holds the creates callers asked to follow, by path prefix, and
// the deletes, by path. Every request written is matched against it, so it
// is indexed: by the directory of a create's prefix (a request's path can
// only match a prefix in its own directory), by the path of a delete.
type tracer struct {
	count   atomic.Int32 // traces held: zero spares the send loop the lock
	mu      sync.Mutex
	creates map[string][]*Trace
	deletes map[string][]*Trace
	// spare is the emptied lists of keys that left the index, for new
	// keys: a lock per key adds, then drops, a key per create and per
	// delete, and a new list each time was an allocation.
	spare [][]*Trace
}

// maxSpare bounds tracer.spare: about the requests traced at once.
const maxSpare = 64

func (tr *tracer) active() bool { return tr.count.Load() > 0 }

// match finds the trace a request for path (its bytes on the wire) answers
// to, without making a string of it.
func (tr *tracer) match(op int32, path []byte) *Trace {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if op == opDelete {
		// A delete trace follows the next delete of its path: matched, it
		// leaves the index, so that a second delete of the path written
		// before the first caller closes its trace finds the next one.
		ts := tr.deletes[string(path)]
		if len(ts) == 0 {
			return nil
		}
		t := ts[0]
		tr.dropLocked(tr.deletes, t.prefix, ts, 0)
		return t
	}
	if !isCreate(op) {
		return nil
	}
	slash := bytes.LastIndexByte(path, '/')
	if slash < 0 {
		return nil
	}
	for _, t := range tr.creates[string(path[:slash])] {
		if len(path) >= len(t.prefix) && string(path[:len(t.prefix)]) == t.prefix {
			return t
		}
	}
	return nil
}

// index is the map t is kept in, and its key there.
func (tr *tracer) index(t *Trace) (map[string][]*Trace, string) {
	if t.delete {
		if tr.deletes == nil {
			tr.deletes = map[string][]*Trace{}
		}
		return tr.deletes, t.prefix
	}
	if tr.creates == nil {
		tr.creates = map[string][]*Trace{}
	}
	// A prefix without a slash matches no request path.
	return tr.creates, t.prefix[:max(strings.LastIndexByte(t.prefix, '/'), 0)]
}

func (tr *tracer) add(t *Trace) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	m, key := tr.index(t)
	ts, ok := m[key]
	if n := len(tr.spare); !ok && n > 0 {
		ts = tr.spare[n-1]
		tr.spare[n-1] = nil
		tr.spare = tr.spare[:n-1]
	}
	m[key] = append(ts, t)
	tr.count.Add(1)
}

func (tr *tracer) remove(t *Trace) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	m, key := tr.index(t)
	ts := m[key]
	if i := slices.Index(ts, t); i >= 0 { // else matched or closed already
		tr.dropLocked(m, key, ts, i)
	}
}

// dropLocked takes ts[i], kept under key in m, out of the index.
func (tr *tracer) dropLocked(m map[string][]*Trace, key string, ts []*Trace, i int) {
	if len(ts) == 1 {
		delete(m, key)
		if len(tr.spare) < maxSpare {
			ts[0] = nil // keeps no trace alive
			tr.spare = append(tr.spare, ts[:0])
		}
	} else {
		m[key] = slices.Delete(ts, i, i+1)
	}
	tr.count.Add(-1)
}

// Trace follows one create (or delete) through the wire: see
// TraceCreate and TraceDelete.
type Trace struct {
	prefix string // a path prefix for creates, the exact path for a delete
	delete bool
	tr     *tracer

	sentOnce sync.Once
	sent     chan struct{}
	onSent   func() // runs in markSent, before sent closes

	mu      sync.Mutex
	done    bool
	path    string
	zxid    int64
	session int64
}

// TraceCreate follows the next create request whose path starts with
// prefix and lies in prefix's directory (a full server path: namespace
// included): only package framework uses it, for a protected create whose
// listing rides right behind it. Sent closes once such a request has been
// written to the server: a request sent on the same session after that is
// answered after it; onSent, if not nil, runs just before, on the send loop
// (it must not block). Result reports the zxid of a successful reply. Close
// the trace when done with it.
func (c *Conn) TraceCreate(prefix string, onSent func()) *Trace {
	t := &Trace{prefix: prefix, tr: &c.tracer, sent: make(chan struct{}), onSent: onSent}
	c.tracer.add(t)
	return t
}

// TraceDelete follows the next delete request of exactly path (a full
// server path). Only Sent is meaningful.
func (c *Conn) TraceDelete(path string) *Trace {
	t := &Trace{prefix: path, delete: true, tr: &c.tracer, sent: make(chan struct{})}
	c.tracer.add(t)
	return t
}

// Sent is closed once a matching request has been written.
func (t *Trace) Sent() <-chan struct{} { return t.sent }

// Result returns the created path, the zxid of the create (the node's czxid)
// and the session it was made on, once a successful reply has been read.
func (t *Trace) Result() (path string, zxid, session int64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.path, t.zxid, t.session, t.done
}

// Close stops following.
func (t *Trace) Close() { t.tr.remove(t) }

func (t *Trace) markSent() {
	t.sentOnce.Do(func() {
		if t.onSent != nil {
			t.onSent()
		}
		close(t.sent)
	})
}

func (t *Trace) complete(path string, zxid, session int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.path, t.zxid, t.session, t.done = path, zxid, session, true
}
