// Package countdown is a distributed countdown latch over ZooKeeper,
// Redisson's RCountDownLatch: a count set once, counted down by any
// process, and waited for by any process until it reaches zero. The latch is
// made of persistent nodes, so it outlives the process that set it and
// every session that touched it.
//
//	latch, err := countdown.New(client, "/jobs/42/done", 3)
//	set, err := latch.TrySetCount(ctx)   // false: a latch is there already, its count stands
//	counted, err := latch.CountDown(ctx) // any process; false: the latch was already open (a no-op)
//	err = latch.Wait(ctx)                // until the count is zero, through cuts, expiries and restarts
//	n, err := latch.Count(ctx)           // remaining; Curator's SharedCount reads the same 4 bytes
//
// A Countdown is a handle on a path: TrySetCount sets the count if no
// latch is there (Redisson's trySetCount), CountDown counts down by one,
// Wait waits until the count is zero (Redisson's await), Count reads it.
// Every error names the latch's path ("countdown /jobs/42/done: ...") and
// wraps the module's sentinels (zkrecipes.ErrOutcomeUnknown,
// zkrecipes.ErrBadData for a node that is not a latch, zkrecipes.ErrClosed,
// ...).
//
// # Exactly once per call
//
// A CountDown call counts at most once, even when a reply is lost and the
// call sends again, and it never reports a count-down that did not
// happen. It says which of three things happened: counted (true, nil); not
// counted because the latch was already open, absent or finished (false,
// nil), as Redisson's countDown on an open latch is a no-op; or, only when
// the outcome truly cannot be known (the latch finished, or ctx ended,
// while a multi that may have counted was unanswered), an error wrapping
// zkrecipes.ErrOutcomeUnknown. Count-downs beyond zero are no-ops: the count never
// goes below zero.
//
// Three things keep a resend from counting twice, all from the call's
// own marker and the count's version: a call that lost a reply asks
// whether its marker exists (one Exists, no listing) and finds it if it
// counted; a resend of a multi that did count fails with NodeExists while
// the marker is there; and every copy of the multi sets the count at the
// version it read, so once one has applied no other can. TrySetCount is
// sent at most once: after a lost reply it finds its own gen- child, or,
// finding no latch or another one, returns zkrecipes.ErrOutcomeUnknown rather than
// set a second latch that nobody would count down.
//
// # Layout
//
//	path                 persistent; data = the REMAINING count, a 4-byte
//	                     big-endian int (Curator SharedCount's format, so
//	                     SharedCount and other tools read it)
//	path/gen-<uuid>      persistent, made with path in one multi: the
//	                     latch's identity (data = the setter's participant id)
//	path/cd-<uuid>       persistent: the marker of one CountDown call in
//	                     flight, a uuid fresh per call (data = participant
//	                     id); deleted by its call once it knows it counted
//
// A count-down is one multi, sent at most once at a time: check that
// path/gen-<uuid> exists, create path/cd-<call uuid>, and set path's data
// to remaining-1 at the version it was read at. The check keeps a call
// made on one latch from ever counting on a later latch at the same path;
// the set at a version makes concurrent count-downs take turns, so the
// count goes down by exactly one per counted call and never below zero;
// the call's own marker makes a resent multi fail with NodeExists if the
// first one was applied (ZooKeeper fails a multi at its first failing
// op), and tells a call that lost its reply whether it counted.
//
// Once a call knows it counted (its reply, or its marker found), it
// deletes its marker (guaranteed: in the background if the link is down),
// so the latch holds the markers of the calls in flight, not one per
// count-down so far. A count-down reads the latch with one Get and names
// the gen- child its handle last counted on (the multi's check proves it,
// and a handle lists the latch only to learn a latch it does not know, or
// at zero): its cost does not depend on the count, which may be up to
// 2^31-1. Markers left behind by callers that died or closed their
// client before deleting them go with the latch.
//
// # Zero, and who deletes what
//
// At zero the latch is open and, as in Redisson, deleted: the CountDown
// that took it to zero deletes path's children and path (path last, at
// the version that holds zero, in the same multi as the last children).
// If that process dies or is cut off first, the next TrySetCount or
// CountDown on the path finishes the deletion. The latch's missing
// parents are made as containers, which the server deletes once they are
// empty. A missing latch is an open one: Wait returns at once, Count
// says 0, CountDown does nothing, and TrySetCount sets a new latch there.
// Deleting the latch by hand (path and its children) opens it, as
// Redisson's delete does: waiters return. A latch whose count never
// reaches zero stays until someone deletes it.
//
// No marker is made once the count is zero, so the finisher deletes those
// of the calls still in flight, and those left behind: a bounded number,
// whatever the count was. A call whose multi counted but whose reply was
// lost, and whose marker the finisher deleted before the call could look,
// cannot know that it counted: zkrecipes.ErrOutcomeUnknown.
//
// TrySetCount on a path that holds an unfinished latch leaves it as it is
// and returns false, whatever its count: the count is decided once, by
// the first setter, as Redisson's trySetCount. A Countdown made with count 0
// never stores anything (a missing latch is an open one): its TrySetCount
// reports whether the path holds no unfinished latch. Handles that only
// count down or wait may pass 0.
//
// # Faults
//
// Nothing a latch stores belongs to a session: a cut link, a session
// expiry or a server restart delays calls, it does not change the count.
// Wait and CountDown wait for the link to come back until their context
// ends; a CountDown whose context ends after its multi may have reached
// the server reports zkrecipes.ErrOutcomeUnknown (Count tells where the latch
// stands, not whether that call counted).
//
// There is no countdown latch in Curator, so there is no Curator interop
// for the latch itself; Curator's SharedCount reads the remaining count
// from path (tested).
package countdown
