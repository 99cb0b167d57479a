// Package goid tells which goroutine is running, for per-goroutine
// reentrancy (Curator's locks are reentrant per thread).
//
// Go deliberately has no goroutine-local state. The id is read by
// github.com/petermattis/goid from the runtime's goroutine structure (a
// few nanoseconds; CockroachDB's choice), which mirrors that structure per
// Go release. A layout that a new Go release changed would give wrong ids,
// and a reentrant lock that takes one goroutine for another is no lock: so
// the fast read is checked at start-up against the slow, documented one
// (the first line of runtime.Stack, "goroutine 42 [running]:"), and is
// used only if they agree, in two goroutines.
package goid

import (
	"runtime"
	"strconv"

	fast "github.com/petermattis/goid"
)

// useFast: the fast read agreed with runtime.Stack at start-up.
var useFast = agree()

func agree() bool {
	if fast.Get() != slow() {
		return false
	}
	other := make(chan bool)
	go func() { other <- fast.Get() == slow() }()
	return <-other
}

// Current returns the id of the calling goroutine.
func Current() int64 {
	if useFast {
		return fast.Get()
	}
	return slow()
}

// slow reads the id from runtime.Stack: about two microseconds.
func slow() int64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	b := buf[:n]
	const prefix = "goroutine "
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		panic("goid: unexpected runtime.Stack format: " + string(b))
	}
	b = b[len(prefix):]
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	id, err := strconv.ParseInt(string(b[:i]), 10, 64)
	if err != nil {
		panic("goid: unexpected runtime.Stack format: " + err.Error())
	}
	return id
}
