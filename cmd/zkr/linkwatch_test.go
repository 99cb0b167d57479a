package main

import (
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stamp is how zkr -v dates what it saw.
const stamp = `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)`

// waitStderr waits until p's stderr matches re, and returns the match.
func (p *proc) waitStderr(t *testing.T, re string) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	var m string
	require.Eventually(t, func() bool {
		m = rx.FindString(p.stderr.String())
		return m != ""
	}, 30*time.Second, 20*time.Millisecond, "stderr never matched %q:\n%s", re, p.stderr.String())
	return m
}

// A waiter with -v says when its view of ZooKeeper goes stale (the link is
// down) and when it is current again, each with the time: before, it said
// nothing while nothing it knew could be trusted. It still gets the lock.
func TestVerboseWaiterSaysWhenTheViewIsStaleAndCurrentAgain(t *testing.T) {
	cl, _ := server(t)
	c := client(t, cl)
	m := newMutex(t, c, "/stale", "holder")
	h, err := m.Acquire(t.Context())
	require.NoError(t, err)
	p := cl.NewProxy()
	z := start(t, "--connect", p.ConnectString(), "--session-timeout", "20s", "-v", "lock", "/stale", "--", "echo", "ran")
	waitChildren(t, c, "/stale", 2)
	p.Refuse(cl.Servers()[0].ID)
	z.waitStderr(t, stamp+`: link to ZooKeeper down \(session 0x[0-9a-f]+\): stale`)
	p.Heal()
	z.waitStderr(t, stamp+`: link to ZooKeeper back \(same session, 0x[0-9a-f]+\): current again, stale for \S+`)
	require.NoError(t, h.Release())
	r := z.wait(t, 30*time.Second)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "ran\n", r.stdout)
}

// A holder with -v (without COMMAND here) says when the view went stale
// and when the hold was lost, each with its time.
func TestVerboseHolderSaysTheViewWentStaleBeforeTheLoss(t *testing.T) {
	cl, _ := server(t)
	p := cl.NewProxy()
	z, _ := startFed(t, "--connect", p.ConnectString(), "--session-timeout", "2s", "-v", "lock", "/stale-held")
	z.heldLine(t)
	p.Blackhole()
	r := z.wait(t, 30*time.Second)
	assert.Equal(t, exitLost, r.code, r.stderr)
	assert.Regexp(t, stamp+`: link to ZooKeeper down \(session 0x[0-9a-f]+\): stale`, r.stderr)
	assert.Regexp(t, stamp+`: hold lost \(.*suspended.*\): /stale-held was not held to the end`, r.stderr)
	p.Heal()
}

// zkr elect -v --requeue says when its view goes stale and current again;
// it loses the term meanwhile and leads again once the link is back.
func TestVerboseElectSaysWhenTheViewIsStaleAndCurrentAgain(t *testing.T) {
	cl, _ := server(t)
	p := cl.NewProxy()
	z := start(t, "--connect", p.ConnectString(), "--session-timeout", "20s", "-v", "elect", "--requeue", "/stale-elect",
		"-c", `echo term; while :; do sleep 0.1; done`)
	z.expectLine(t, "term")
	p.Refuse(cl.Servers()[0].ID)
	z.waitStderr(t, stamp+`: link to ZooKeeper down`)
	z.waitStderr(t, `leadership lost; campaigning again`)
	p.Heal()
	z.waitStderr(t, stamp+`: link to ZooKeeper back \(\S+ session, 0x[0-9a-f]+\): current again`)
	z.expectLine(t, "term")
	z.signal(t, syscall.SIGTERM)
	r := z.wait(t, 30*time.Second)
	assert.Equal(t, 128+int(syscall.SIGTERM), r.code, r.stderr)
}
