package framework

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/retry"
)

// DefaultMaxRequestSize is the largest request a ZooKeeper server reads
// with its default settings: jute.maxbuffer, 0xfffff bytes, bounds the
// length of every packet it receives (the request header and body, not
// the packet's own 4-byte length).
const DefaultMaxRequestSize = 0xfffff

// maxSendable is the largest request go-zookeeper v1.0.4 can write: its
// send buffer is 1.5 MiB, the packet's length included. Above it the
// request fails unsent (zk.ErrShortBuffer).
const maxSendable = 1536*1024 - 4

// WithMaxRequestSize sets the largest request the client sends, in bytes
// as ZooKeeper counts them against its jute.maxbuffer: the request header
// and body (path, data, ACL list, flags; for a multi, every op and its
// header), not the packet's 4-byte length. The default,
// DefaultMaxRequestSize, is a server's with default settings. A write
// whose request is larger is refused before anything is sent, with an
// error wrapping zkrecipes.ErrTooLarge: a server closes the connection on a request
// over its jute.maxbuffer, and every hold on the client would go with it.
//
// Raise it only for servers started with a larger jute.maxbuffer (the
// system property -Djute.maxbuffer=n of every server, and of every Java
// client that reads such nodes). n must be between 1 and 1572860 bytes
// (go-zookeeper's send buffer, 1.5 MiB, less the packet's length).
//
// A request over DefaultMaxRequestSize is sent at most once, whatever the
// retry policy: if the server takes less, it closes the connection on the
// request, and a resend would close it again on every reconnect. When its
// reply does not come (the link dropped, the client closed or ctx ended
// meanwhile), the call fails with an error wrapping zkrecipes.ErrOutcomeUnknown that
// says the server may have refused the request for its size. A protected
// create (Protected) then deletes any node it may have made, in the
// background.
func WithMaxRequestSize(n int) Option { return clientOption(func(o *options) { o.maxRequest = n }) }

// MaxRequestSize returns the largest request the client sends (see
// WithMaxRequestSize).
func (c *Client) MaxRequestSize() int { return c.maxRequest }

// CheckCreate reports what Create(ctx, path, data, opts...) would refuse
// before sending anything, a closed client aside: a malformed path or
// option (zkrecipes.ErrInvalidPath, zkrecipes.ErrInvalidArgument), or a request over the size
// limit (zkrecipes.ErrTooLarge). It sends nothing, so a recipe can refuse a
// participant id or a seed too large for the node it becomes when the
// recipe is made rather than at each use. A protected create is measured
// with the 36 characters of its UUID, with the ACL the client's provider
// gives for the path as sent.
func (c *Client) CheckCreate(path string, data []byte, opts ...CreateOption) error {
	o := applyCreateOptions(opts)
	if err := validatePath(path, o.mode.sequential()); err != nil {
		return opErr("create", path, err)
	}
	if err := o.validate(); err != nil {
		return opErr("create", path, err)
	}
	if o.protected && o.protectID == "" {
		o.protectID = placeholderID // as long as any; no random id to draw
	}
	_, err := c.measureCreate(path, data, &o)
	return err
}

// placeholderID stands for a protected create's UUID where only its length
// matters.
const placeholderID = "00000000-0000-4000-8000-000000000000"

// CheckMulti reports what Multi(ctx, ops...) would refuse before sending
// anything, a closed client aside: an op it does not take
// (zkrecipes.ErrInvalidArgument, zkrecipes.ErrUnsupportedInMulti), a malformed path
// (zkrecipes.ErrInvalidPath), or a multi over the size limit (zkrecipes.ErrTooLarge). It
// sends nothing.
func (c *Client) CheckMulti(ops ...any) error {
	_, _, _, err := c.prepareMulti(ops)
	return err
}

// The size of a request, as go-zookeeper v1.0.4 encodes it (structs.go:
// an int32 is 4 bytes, an int64 8, a bool 1; a string or a byte slice is
// its length in 4 bytes, then its bytes, and a nil slice the length -1
// alone; a list is its count in 4 bytes, then each element) and as the
// server counts it against jute.maxbuffer (NIOServerCnxn.readLength and
// NettyServerCnxn compare the packet's length, which does not count its
// own 4 bytes): the request header, then the body.
const (
	requestHeaderSize = 4 + 4     // xid, opcode
	multiHeaderSize   = 4 + 1 + 4 // type, done, err: before each op of a multi, and once at its end
)

// stringSize is the size of a string of n bytes.
func stringSize(n int) int { return 4 + n }

func bytesSize(b []byte) int { return 4 + len(b) }

func aclSize(acl []zk.ACL) int {
	n := 4
	for _, a := range acl {
		n += 4 + stringSize(len(a.Scheme)) + stringSize(len(a.ID)) // perms, scheme, id
	}
	return n
}

// createBodySize is a create's body, its path pathLen bytes: path, data,
// ACL, flags, and the TTL of a TTL create (CreateTTLRequest). A container
// create is a plain CreateRequest.
func createBodySize(pathLen int, data []byte, acl []zk.ACL, ttl bool) int {
	n := stringSize(pathLen) + bytesSize(data) + aclSize(acl) + 4
	if ttl {
		n += 8
	}
	return n
}

// setBodySize is a set's body, its path pathLen bytes: path, data,
// version.
func setBodySize(pathLen int, data []byte) int { return stringSize(pathLen) + bytesSize(data) + 4 }

// pathVersionBodySize is a delete's or a check's body, its path pathLen
// bytes: path, version.
func pathVersionBodySize(pathLen int) int { return stringSize(pathLen) + 4 }

// measureCreate returns the size of the create that Create sends for path
// and o, or the error of one over the limit. It settles what the size
// depends on, for Create to send exactly that: a protected create's id,
// and the ACL (asked of the provider once, for the path as sent).
func (c *Client) measureCreate(path string, data []byte, o *createOptions) (int, error) {
	sent := path
	if o.protected {
		if o.protectID == "" {
			o.protectID, o.sent = newProtectedID(), ""
		}
		if o.sent == "" {
			o.sent = protectedPath(path, o.protectID)
		}
		sent = o.sent
	}
	o.acl = c.aclFor(sent, o.acl)
	size := requestHeaderSize + createBodySize(c.ns.fixedLen(sent, o.mode.sequential()), data, o.acl, o.mode.ttl())
	if size > c.maxRequest {
		return size, c.tooLarge("create", path, size, "")
	}
	return size, nil
}

// tooLarge is the error of a request of size bytes over the client's
// limit; detail, if any, says more about it.
func (c *Client) tooLarge(op, path string, size int, detail string) error {
	if detail != "" {
		detail = " (" + detail + ")"
	}
	return opErr(op, path, fmt.Errorf("%w: %d bytes%s, limit %d (the server's jute.maxbuffer; see WithMaxRequestSize)",
		zkrecipes.ErrTooLarge, size, detail, c.maxRequest))
}

// sentOnce is the retry option of a request of size bytes: one over
// ZooKeeper's default limit is sent again only if go-zookeeper proves it
// never sent it (zk.ErrNoServer: still queued when a round of servers all
// failed to connect). A server that takes no more than the default closes
// the link on reading such a request's length, and would close it again
// on every resend.
func sentOnce(size int) retry.Option {
	if size <= DefaultMaxRequestSize {
		return nil
	}
	return retry.WithRetryable(func(err error) bool { return errors.Is(err, zk.ErrNoServer) })
}

// unanswered is the error of a request of size bytes, sent at most once,
// that failed with err: for one over ZooKeeper's default limit whose
// reply never came, an *oversizeUnanswered; else err.
func unanswered(size int, err error) error {
	if size <= DefaultMaxRequestSize || err == nil || errors.Is(err, zk.ErrNoServer) || !replyLost(err) {
		return err
	}
	return &oversizeUnanswered{size: size, err: err}
}

// replyLost reports whether err leaves a request that go-zookeeper may
// have written without an answer: the link dropped (the connection's
// error, or the socket's own for a write cut short), the client closed,
// or the caller stopped waiting.
func replyLost(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrClosing) || errors.Is(err, zkrecipes.ErrClosed) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		retry.Retryable(err) && !errors.Is(err, zk.ErrSessionMoved)
}

// oversizeUnanswered is the error of a request over ZooKeeper's default
// limit whose reply never came: it may have been applied, or the server
// may have closed the link on it for its size.
type oversizeUnanswered struct {
	size int
	err  error
}

func (e *oversizeUnanswered) Error() string {
	return fmt.Sprintf("%v: the request, %d bytes, is over ZooKeeper's default limit of %d "+
		"and was sent once: the server may have refused it for its size by closing the connection "+
		"(its jute.maxbuffer; see WithMaxRequestSize): %v", zkrecipes.ErrOutcomeUnknown, e.size, DefaultMaxRequestSize, e.err)
}

// Unwrap returns zkrecipes.ErrOutcomeUnknown and the error the request met.
func (e *oversizeUnanswered) Unwrap() []error { return []error{zkrecipes.ErrOutcomeUnknown, e.err} }

// Retryable vetoes a resend (see retry.Retryable), by a retry loop of the
// caller's too: a server that refused the request would close the link
// again on each one.
func (e *oversizeUnanswered) Retryable() bool { return false }
