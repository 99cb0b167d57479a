package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
)

// Kind names one entry of a run's history.
type Kind string

// What contenders report about themselves. Each is stamped by the contender
// with the machine's wall clock the moment it happens, not when the
// orchestrator reads it: every process of a run shares that clock, so entries
// from different processes order correctly however late their lines arrive.
const (
	// KindStart: the contender has a session (Session) and begins its loop.
	KindStart Kind = "start"
	// KindSession: the contender's client is on a new session (Session).
	KindSession Kind = "session"
	// KindAcquireCall: the contender asks for the lock (Mode for a
	// read-write lock).
	KindAcquireCall Kind = "acquire-call"
	// KindAcquireOK: the recipe granted it (Token is the fencing token,
	// Granted when the recipe granted it). The hold is trusted from
	// Granted; the event itself is stamped when the contender reports it,
	// which a freeze may delay.
	KindAcquireOK Kind = "acquire-ok"
	// KindAcquireFail: the ask ended without a hold (timeout, error).
	KindAcquireFail Kind = "acquire-fail"
	// KindTrusted: a holder checked that its hold is still trusted and is
	// about to write with Token. The nemesis freezes a holder right after
	// this, where a GC pause hurts most.
	KindTrusted Kind = "trusted"
	// KindFreezing answers the orchestrator's "freeze": the contender stops
	// itself now. KindNoFreeze answers "nofreeze" when it had not.
	KindFreezing Kind = "freezing"
	KindNoFreeze Kind = "nofreeze"
	// KindLoss: the hold's loss signal fired (Detail says why); the hold is
	// no longer trusted.
	KindLoss Kind = "loss"
	// KindReleaseCall: the contender stops trusting the hold and releases.
	KindReleaseCall Kind = "release-call"
	// KindReleaseOK: the release returned (Detail carries its error).
	KindReleaseOK Kind = "release-ok"
	// KindIdle: after a quiesce command, the contender holds nothing and
	// waits for nothing, with its session still open.
	KindIdle Kind = "idle"
	// KindLeak: at exit, goroutines of the library were left running.
	KindLeak Kind = "leak"
	// KindExit: the contender closed everything and is about to exit.
	KindExit Kind = "exit"
)

// What the orchestrator records.
const (
	// KindFault: the nemesis injected a fault (Detail: its kind and target);
	// KindHeal ends it.
	KindFault Kind = "fault"
	KindHeal  Kind = "heal"
	// KindDeleted: the nemesis deleted a holder's node (Client, Token: the
	// hold's) in the transaction Zxid, read from the servers' reply.
	KindDeleted Kind = "deleted"
	// KindKill: the contender's process was killed with SIGKILL.
	KindKill Kind = "kill"
	// KindStop and KindCont: the process was frozen with SIGSTOP and thawed
	// with SIGCONT.
	KindStop Kind = "stop"
	KindCont Kind = "cont"
	// KindWrite: the fenced resource took a write (Accepted says whether).
	KindWrite Kind = "write"
	// KindQuiesce: the nemesis is done and the contenders are told to stop.
	KindQuiesce Kind = "quiesce"
)

// Event is one line of a run's history.
type Event struct {
	// T is the wall-clock time in Unix nanoseconds.
	T int64 `json:"t"`
	// Client is the contender ("c3"); empty for faults on servers.
	Client string `json:"client,omitempty"`
	Kind   Kind   `json:"kind"`
	// Op numbers a contender's acquire attempts, so that a hold's events
	// pair up.
	Op int `json:"op,omitempty"`
	// Mode is "r" or "w" for the read-write lock, empty otherwise.
	Mode string `json:"mode,omitempty"`
	// Item is the partitioner's work item a hold is of; empty otherwise.
	Item  string `json:"item,omitempty"`
	Token int64  `json:"token,omitempty"`
	// Granted is when the recipe granted the hold (hold.Hold.Granted, Unix
	// nanoseconds), for KindAcquireOK.
	Granted int64 `json:"granted,omitempty"`
	Session int64 `json:"session,omitempty"`
	// Keep: a latch's KindAcquireOK whose latch stays in the election if
	// the term is lost (latchLoop), the leader delete-node aims at.
	Keep     bool   `json:"keep,omitempty"`
	Pid      int    `json:"pid,omitempty"`
	Accepted bool   `json:"accepted,omitempty"`
	Detail   string `json:"detail,omitempty"`
	// Class is the class of the error in Detail, decided where the error
	// was (errClassOf): the checkers count by it, never by message text.
	Class string `json:"class,omitempty"`
	// Zxid is the zxid of what a fault did at the servers (the delete of
	// a holder's node), for checks that order it against other writes.
	Zxid int64 `json:"zxid,omitempty"`
}

// Time returns T as a time.Time.
func (e Event) Time() time.Time { return time.Unix(0, e.T) }

func (e Event) marshal() []byte {
	b, err := json.Marshal(e)
	if err != nil {
		panic(err) // only plain fields: cannot happen
	}
	return append(b, '\n')
}

func now() int64 { return time.Now().UnixNano() }

// The classes of the errors events report (Event.Class).
const (
	ClassTimeout        = "timeout"
	ClassCancelled      = "cancelled"
	ClassHoldLost       = "hold-lost"
	ClassOutcomeUnknown = "outcome-unknown"
	ClassSession        = "session"
	ClassError          = "error"
)

// errClassOf names err's class by the library's sentinels and the
// context's errors, with errors.Is: a message's wording is not an API.
func errClassOf(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, zkrecipes.ErrHoldLost):
		return ClassHoldLost
	case errors.Is(err, zkrecipes.ErrOutcomeUnknown):
		return ClassOutcomeUnknown
	case errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout
	case errors.Is(err, context.Canceled), errors.Is(err, zkrecipes.ErrClosed):
		return ClassCancelled
	case errors.Is(err, zkrecipes.ErrSessionLost), errors.Is(err, zkrecipes.ErrSuspended), errors.Is(err, zk.ErrSessionExpired):
		return ClassSession
	}
	return ClassError
}
