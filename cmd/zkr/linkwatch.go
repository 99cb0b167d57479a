package main

import (
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
)

// stampLayout is how zkr writes the time of what it saw: local time to the
// millisecond, with the offset.
const stampLayout = "2006-01-02T15:04:05.000Z07:00"

// stampf is log.printf, with the time first under -v, where it goes
// among watchLink's dated lines: the loss of a hold and the link going
// down are seen on two goroutines, in either order.
func stampf(log *logger, format string, args ...any) {
	if log.verbose {
		format = time.Now().Format(stampLayout) + ": " + format
	}
	log.printf(format, args...)
}

// watchLink says, with -v, when zkr's view of ZooKeeper goes stale (the
// link is down, a frozen server stopped answering, the session is lost)
// and when it is current again, each with the time the client saw it:
// without it, a waiter or a holder is silent while nothing it knows can be
// trusted. Call stop when done: it says first what the client had seen by
// then, so that a hold lost as the link went down is not reported alone.
func watchLink(c *framework.Client, log *logger) (stop func()) {
	if !log.verbose {
		return func() {}
	}
	sub := c.Subscribe()
	seen := <-sub.Changes() // the state as it stands: zkr has just connected
	session := seen.SessionID
	until := make(chan conn.Event)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var staleSince time.Time // zero while the view is current
		var target *conn.Event   // set by stop: the last change to say
		var deadline <-chan time.Time
		for target == nil || seen != *target {
			var ev conn.Event
			var ok bool
			select {
			case ev, ok = <-sub.Changes():
				if !ok {
					return
				}
			case t := <-until:
				target, until = &t, nil
				// Queued before stop looked, so soon read; the bound is
				// for a reader that can never catch up.
				deadline = time.After(2 * time.Second)
				continue
			case <-deadline:
				return
			}
			seen = ev
			at := ev.Time.Format(stampLayout)
			switch ev.State {
			case conn.StateSuspended:
				staleSince = ev.Time
				log.printf("%s: link to ZooKeeper down (session 0x%x): stale until it is back; whatever zkr holds is in doubt", at, session)
			case conn.StateLost:
				if staleSince.IsZero() {
					staleSince = ev.Time
				}
				how := "the server expired it"
				if ev.Simulated {
					how = "no link for the session timeout"
				}
				log.printf("%s: session 0x%x lost (%s): its nodes are gone; stale until a new session", at, session, how)
			case conn.StateReconnected, conn.StateReadOnly:
				kind := "link to ZooKeeper back"
				if ev.State == conn.StateReadOnly {
					kind = "link to a read-only ZooKeeper server back"
				}
				which := "same session"
				if ev.NewSession {
					which = "a new session"
				}
				session = ev.SessionID
				stale := ""
				if !staleSince.IsZero() {
					stale = ", stale for " + ev.Time.Sub(staleSince).Round(time.Millisecond).String()
				}
				log.printf("%s: %s (%s, 0x%x): current again%s", at, kind, which, session, stale)
				staleSince = time.Time{}
			}
		}
	}()
	return func() {
		// Every subscriber is sent the same changes in the same order, and
		// a new one starts with the last: once this reader has said it,
		// it has said everything the client had seen.
		now := c.Subscribe()
		last := <-now.Changes()
		now.Close()
		select {
		case until <- last:
			<-done
		case <-done:
		}
		sub.Close()
	}
}
