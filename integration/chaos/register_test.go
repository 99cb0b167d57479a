package chaos

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes"
)

func entry(czxid, token int64, client string, op int, mode string) RegisterEntry {
	return RegisterEntry{Czxid: czxid, Token: token, Client: client, Op: op, Mode: mode, Path: "/r/w-" + client}
}

func TestRegisterCleanHandoffsHaveNoViolation(t *testing.T) {
	var h hist
	h.holdOf("c1", 1, 0, 10, 50, 52, token(100))
	h.holdOf("c2", 1, 5, 55, 90, 91, token(200))
	h.at(20, "c1", KindFenced, 1, token(100), accepted(true), detail("/r/w-c1"))
	r := Check(Mutex, 1, st, h)
	r.CheckRegister(Mutex, h, []RegisterEntry{entry(110, 100, "c1", 1, ""), entry(120, 100, "c1", 1, ""), entry(210, 200, "c2", 1, "")})
	assert.Empty(t, r.Violations)
	assert.Equal(t, 3, r.RegisterWrites)
}

func TestRegisterTokenGoingDownIsCaught(t *testing.T) {
	var h hist
	h.holdOf("c1", 1, 0, 10, 50, 52, token(100))
	h.holdOf("c2", 1, 5, 55, 90, 91, token(200))
	r := Check(Mutex, 1, st, h)
	// c1's write committed after c2's: a write by a non-holder.
	r.CheckRegister(Mutex, h, []RegisterEntry{entry(210, 200, "c2", 1, ""), entry(220, 100, "c1", 1, "")})
	assert.Equal(t, 1, kinds(r)["register-stale-write"])
}

func TestRegisterWriteByNoGrantedHoldIsCaught(t *testing.T) {
	var h hist
	h.holdOf("c1", 1, 0, 10, 50, 52, token(100))
	r := Check(Mutex, 1, st, h)
	r.CheckRegister(Mutex, h, []RegisterEntry{entry(110, 100, "c2", 1, ""), entry(120, 150, "c1", 1, "")})
	assert.Equal(t, 2, kinds(r)["register-non-holder"], "another client's token, and a token never granted")
}

func TestRegisterSharedHoldsMayInterleaveButNotCrossAWriter(t *testing.T) {
	var h hist
	h.holdOf("c1", 1, 0, 10, 50, 52, token(100), mode("r"))
	h.holdOf("c2", 1, 0, 12, 50, 52, token(110), mode("r"))
	h.holdOf("c3", 1, 0, 60, 90, 91, token(120), mode("w"))
	r := Check(RWLock, 0, st, h)
	r.CheckRegister(RWLock, h, []RegisterEntry{
		entry(111, 110, "c2", 1, "r"), entry(112, 100, "c1", 1, "r"), // readers together: any order
		entry(130, 120, "c3", 1, "w"),
	})
	assert.Empty(t, r.Violations)

	r = Check(RWLock, 0, st, h)
	r.CheckRegister(RWLock, h, []RegisterEntry{entry(130, 120, "c3", 1, "w"), entry(131, 100, "c1", 1, "r")})
	assert.Equal(t, 1, kinds(r)["register-stale-write"], "a reader's write after a later writer's")
}

func TestRegisterAcknowledgedWriteMissingIsCaught(t *testing.T) {
	var h hist
	h.holdOf("c1", 1, 0, 10, 50, 52, token(100))
	h.at(20, "c1", KindFenced, 1, token(100), accepted(true), detail("/r/w-0000000007"))
	r := Check(Mutex, 1, st, h)
	r.CheckRegister(Mutex, h, nil)
	assert.Equal(t, 1, kinds(r)["register-lost-write"])
}

// The register counts refusals by the error's class, decided at the
// contender with errors.Is: the wording of ErrHoldLost ("hold lost before
// release") once hid every refusal among "other errors".
func TestRegisterCountsRefusalsByClass(t *testing.T) {
	var h hist
	h.holdOf("c1", 1, 0, 10, 50, 51, token(100))
	h.at(20, "c1", KindFenced, 1, token(100), detail("mutex /chaos/mutex: fenced write under /chaos/mutex: hold lost before release: node deleted by someone else"), class(ClassHoldLost))
	h.at(30, "c1", KindFenced, 1, token(100), detail("whatever the words"), class(ClassOutcomeUnknown))
	h.at(40, "c1", KindFenced, 1, token(100), detail("hold was lost"), class(ClassError))
	r := Check(Mutex, 1, st, h)
	r.CheckRegister(Mutex, h, nil)
	assert.Equal(t, 1, r.RegisterRefused)
	assert.Equal(t, 1, r.RegisterUnknown)
	assert.Equal(t, 1, r.RegisterFailed)
}

func TestErrClassIsBySentinel(t *testing.T) {
	wrapped := fmt.Errorf("mutex /x: %w: %w", zkrecipes.ErrHoldLost, zkrecipes.ErrNodeDeleted)
	assert.Equal(t, ClassHoldLost, errClassOf(wrapped))
	assert.Equal(t, ClassOutcomeUnknown, errClassOf(fmt.Errorf("x: %w", zkrecipes.ErrOutcomeUnknown)))
	assert.Equal(t, ClassTimeout, errClassOf(fmt.Errorf("acquire: %w", context.DeadlineExceeded)))
	assert.Equal(t, ClassCancelled, errClassOf(zkrecipes.ErrClosed))
	assert.Equal(t, ClassError, errClassOf(errors.New("hold was lost")))
	assert.Equal(t, "", errClassOf(nil))
}

// A write that commits after its hold's node was deleted (the delete's zxid
// from the servers' reply) came through without the check at the server:
// the planted bug of a Fenced that sends no check on the hold's node.
func TestRegisterWriteAfterItsNodeWasDeleted(t *testing.T) {
	var h hist
	h.holdOf("c1", 1, 0, 10, 50, 51, token(100))
	h.at(30, "c1", KindFault, 0, token(100), detail("stall-write c1 /chaos/mutex/n (holding)"))
	h.at(31, "c1", KindDeleted, 0, token(100), func(e *Event) { e.Zxid = 150 }, detail("/chaos/mutex/n"))
	r := Check(Mutex, 1, st, h)
	r.CheckRegister(Mutex, h, []RegisterEntry{entry(120, 100, "c1", 1, ""), entry(160, 100, "c1", 1, "")})
	assert.Equal(t, 1, kinds(r)["register-write-after-delete"], r.Violations)

	// Before the delete, or another hold's write: nothing.
	r = Check(Mutex, 1, st, h)
	r.CheckRegister(Mutex, h, []RegisterEntry{entry(120, 100, "c1", 1, ""), entry(160, 200, "c2", 1, "")})
	assert.Zero(t, kinds(r)["register-write-after-delete"], r.Violations)
}
