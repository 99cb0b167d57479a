package conn

import (
	"math"
	"time"
)

// DefaultSessionTimeout is the session timeout asked of the server when none
// is given. The server clamps it into its own [min, max] bounds.
const DefaultSessionTimeout = 10 * time.Second

// MaxSessionTimeout is the longest session timeout the protocol can ask
// for (int32 milliseconds). Servers cap what they grant far lower (their
// maxSessionTimeout, 20 ticks by default); Session.Timeout says what they
// chose.
const MaxSessionTimeout = math.MaxInt32 * time.Millisecond

// Session is what a caller needs to decide whether something it did on a
// session can still be trusted: the session's id and negotiated timeout,
// and two channels that close when that trust ends. It costs no goroutine
// to hold one; a framework.Client's Session method returns the current one.
type Session struct {
	// ID is the session id (0 before the first session).
	ID int64
	// Timeout is the session timeout the server negotiated.
	Timeout time.Duration
	// Suspended is closed when the link that was up when the Session was
	// taken goes down (already closed if it was down), and on Lost and at
	// the client's Close.
	Suspended <-chan struct{}
	// Lost is closed when this session is lost, and at the client's Close.
	Lost <-chan struct{}
}
