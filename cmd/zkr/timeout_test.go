package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// --timeout that runs out while zkr waits in the queue with the link to
// ZooKeeper down is not a busy lock either: 125, saying the link was down.
// Before, it was 124.
func TestTimeoutWhileTheLinkIsDownIsNotABusyLock(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	holdMutex(t, newMutex(t, c, "/down", "holder"))
	p := cl.NewProxy()
	z := start(t, "--connect", p.ConnectString(), "--session-timeout", "20s", "lock", "--timeout", "3s", "/down", "--", "true")
	waitChildren(t, c, "/down", 2)
	p.Refuse(cl.Servers()[0].ID)
	r := z.wait(t, 30*time.Second)
	assert.Equal(t, exitFailed, r.code, r.stderr)
	assert.Contains(t, r.stderr, "link to ZooKeeper was down")
	p.Heal()

	// The same wait with the link up is a busy lock: 124.
	r = zkr(t, args(connect, cmd("lock", "--timeout", "500ms", "/down", "--", "true"))...)
	assert.Equal(t, exitTimeout, r.code, r.stderr)
}
