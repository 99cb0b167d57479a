package fwlink

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHeadsRemembersByPathAndCzxidOnce(t *testing.T) {
	var h Heads
	h.Note("/q/lock-0000000001", 7)
	assert.False(t, h.Was("/q/lock-0000000001", 8), "another node made at the same path")
	assert.False(t, h.Was("/q/lock-0000000002", 7))
	assert.True(t, h.Was("/q/lock-0000000001", 7))
	assert.False(t, h.Was("/q/lock-0000000001", 7), "a node has one successor: asked once")
}

func TestHeadsForgetsTheOldestBeyondItsRing(t *testing.T) {
	var h Heads
	for i := range headsKept + 1 {
		h.Note(fmt.Sprintf("/q/lock-%010d", i), int64(i))
	}
	assert.False(t, h.Was("/q/lock-0000000000", 0), "the oldest is forgotten")
	assert.True(t, h.Was("/q/lock-0000000001", 1))
	assert.True(t, h.Was(fmt.Sprintf("/q/lock-%010d", headsKept), headsKept))
	assert.LessOrEqual(t, len(h.set), headsKept)
}

func BenchmarkEngineHeads(b *testing.B) {
	var h Heads
	paths := make([]string, 4096)
	for i := range paths {
		paths[i] = fmt.Sprintf("/q/lock-%010d", i)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p := paths[i%len(paths)]
		h.Note(p, int64(i))
		h.Was(p, int64(i))
	}
}
