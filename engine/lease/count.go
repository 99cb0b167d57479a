package lease

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
)

// currentMax returns the maximum, whether it is known, and a channel closed
// when it changes.
func (s *Semaphore) currentMax() (max int, known bool, changed <-chan struct{}) {
	s.maxMu.Lock()
	defer s.maxMu.Unlock()
	return s.max, s.known, s.maxChanged
}

func (s *Semaphore) setMax(max int) {
	s.maxMu.Lock()
	defer s.maxMu.Unlock()
	if s.known && s.max == max {
		return
	}
	s.max, s.known = max, true
	close(s.maxChanged)
	s.maxChanged = make(chan struct{})
}

// follow reads the shared count and reads it again on every change, until
// Close (or the client's). While the node is missing or unreadable the last
// value read stays in force; before the first one, acquirers wait.
func (s *Semaphore) follow(life context.Context) {
	c := s.client
	pacer := c.RetryPolicy().Pacer()
	for life.Err() == nil {
		data, _, watch, err := c.GetW(life, s.countPath)
		if errors.Is(err, zk.ErrNoNode) {
			var exists bool
			exists, _, watch, err = c.ExistsW(life, s.countPath)
			if err == nil && exists {
				continue // made meanwhile: read it
			}
		} else if err == nil {
			if v, derr := s.decode(data); derr != nil {
				c.Logger().Warn("zookeeper semaphore: ignoring shared count", "path", s.countPath, "err", derr)
			} else {
				s.setMax(v)
			}
		}
		if err != nil {
			if life.Err() != nil || errors.Is(err, zkrecipes.ErrClosed) {
				return
			}
			c.Logger().Debug("zookeeper semaphore: reading shared count failed; will retry", "path", s.countPath, "err", err)
			if !pacer.Wait(life) {
				return
			}
			continue
		}
		pacer.Reset()
		select {
		case <-watch: // changed, made, deleted, or the watch ended: read again
		case <-life.Done():
			return
		}
	}
}
