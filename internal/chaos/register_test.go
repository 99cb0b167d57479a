package chaos

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
