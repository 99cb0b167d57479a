package mailbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSlowReaderGetsEverythingInOrder(t *testing.T) {
	m := New[int]()
	for i := 0; i < 1000; i++ {
		m.Push(i) // never blocks, nobody reading yet
	}
	for i := 0; i < 1000; i++ {
		assert.Equal(t, i, <-m.Out())
	}
	m.Stop()
	_, open := <-m.Out()
	assert.False(t, open)
}

func TestFinishDeliversWhatIsQueuedThenCloses(t *testing.T) {
	m := New[string]()
	m.Push("a")
	m.Push("b")
	m.Finish()
	var got []string
	for v := range m.Out() {
		got = append(got, v)
	}
	assert.Equal(t, []string{"a", "b"}, got)
}

func TestStopDropsAndEndsAtOnce(t *testing.T) {
	m := New[int]()
	m.Push(1)
	m.Stop()
	m.Stop() // idempotent
	for range m.Out() {
	}
}

func TestPushBoundedWithoutCatchUpCutsOffAndQueuesNothingMore(t *testing.T) {
	m := New[int]()
	defer m.Stop()
	ok := true
	for i := 0; i < 10 && ok; i++ {
		ok = m.PushBounded(i, 3, nil)
	}
	assert.False(t, ok, "10 values overflow a queue of 3")
	assert.False(t, m.PushBounded(99, 3, nil), "once cut off, it stays cut off")
	m.Push(98)
	m.Finish()
	var got []int
	for v := range m.Out() {
		got = append(got, v)
	}
	assert.LessOrEqual(t, len(got), 1, "at most the value being handed over: %v", got)
}
