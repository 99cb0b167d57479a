package goid

import (
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCurrentIsStableWithinAGoroutineAndDistinctAcross(t *testing.T) {
	me := Current()
	assert.Equal(t, me, Current())
	ids := make(chan int64, 10)
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); ids <- Current() }()
	}
	wg.Wait()
	close(ids)
	seen := map[int64]bool{me: true}
	for id := range ids {
		assert.False(t, seen[id], "id %d reused among live goroutines", id)
		seen[id] = true
	}
}

func BenchmarkCurrent(b *testing.B) {
	for b.Loop() {
		Current()
	}
}

// The fast read is in use on this Go release, and agrees with the slow one
// in many goroutines, not only the two checked at start-up.
func TestFastReadAgreesWithRuntimeStack(t *testing.T) {
	assert.True(t, useFast, "the fast read disagreed with runtime.Stack at start-up on %s", runtime.Version())
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() { defer wg.Done(); assert.Equal(t, slow(), Current()) }()
	}
	wg.Wait()
}

func BenchmarkSlow(b *testing.B) {
	for b.Loop() {
		slow()
	}
}
