package session

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
)

// WaitConnected read the session's fields after letting go of the lock,
// while a reconnect on the same session replaces its Suspended channel
// under the lock (seen by make test's race detector in a fenced-write
// test). Under -race this fails whenever the two are not ordered.
func TestWaitConnectedReadsTheSessionUnderTheLock(t *testing.T) {
	c := &Conn{state: conn.StateConnected, changed: make(chan struct{}), epoch: newEpoch(1, time.Second)}
	for range 100 {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.WaitConnected(context.Background()); err != nil {
				t.Error(err)
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			// What sessionLocked does on a reconnect within the session.
			c.mu.Lock()
			c.epoch.suspended = make(chan struct{})
			c.mu.Unlock()
		}()
		wg.Wait()
	}
}
