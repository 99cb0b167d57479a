package conn

import (
	"fmt"
	"time"
)

// State is a connection state, as Curator's ConnectionState.
type State int

// The states of a session. The zero value is not a state a listener sees.
const (
	// StateConnected: the first session is established.
	StateConnected State = iota + 1
	// StateSuspended: the link to the ensemble is down. The session may still
	// be alive; nothing owned by it can be trusted until Reconnected.
	StateSuspended
	// StateReconnected: the link is back. Event.NewSession tells whether the
	// session is the one from before.
	StateReconnected
	// StateLost: the session is gone, as the server said (expired) or as
	// this client decided after staying Suspended for the session timeout.
	StateLost
	// StateReadOnly: connected to a server in read-only mode (only when
	// framework.WithReadOnly allows it). Writes fail until a read-write server is found.
	StateReadOnly
	// StateClosed: the client was closed. It is the last event of a subscription.
	StateClosed
)

var stateNames = map[State]string{
	StateConnected:   "Connected",
	StateSuspended:   "Suspended",
	StateReconnected: "Reconnected",
	StateLost:        "Lost",
	StateReadOnly:    "ReadOnly",
	StateClosed:      "Closed",
}

func (s State) String() string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// IsConnected reports whether requests can be served in this state.
func (s State) IsConnected() bool {
	return s == StateConnected || s == StateReconnected || s == StateReadOnly
}

// Event is one state change of a session.
type Event struct {
	State State
	// SessionID is the session the client is on after the change (0 when
	// there is none).
	SessionID int64
	// NewSession is set on Connected, and on Reconnected and ReadOnly when the
	// session differs from the one before, or when the one before was Lost.
	NewSession bool
	// Simulated is set on Lost when the client declared the loss itself,
	// after staying Suspended for the session timeout, before the server said
	// so.
	Simulated bool
	// Time is when the change was observed.
	Time time.Time
}

func (e Event) String() string {
	s := fmt.Sprintf("%s session=0x%x", e.State, e.SessionID)
	if e.NewSession {
		s += " new"
	}
	if e.Simulated {
		s += " simulated"
	}
	return s
}
