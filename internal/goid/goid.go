// Package goid tells which goroutine is running, for per-goroutine
// reentrancy (Curator's locks are reentrant per thread).
//
// Go deliberately has no goroutine-local state. The id is read from the
// first line of runtime.Stack ("goroutine 42 [running]:"), the one stable,
// documented place it appears; it costs about a microsecond, which is small
// beside a ZooKeeper round trip.
package goid

import (
	"runtime"
	"strconv"
)

// Current returns the id of the calling goroutine.
func Current() int64 {
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
