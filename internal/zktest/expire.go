package zktest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/zkserver"
)

// ExpireSession makes the servers really expire sessionID, the session of a
// client connected through p: it blackholes p until no server knows the
// session any more, then heals p. The client is told only when it reconnects,
// as with a real partition. Other clients on p lose their sessions too, so
// give the victim its own proxy (Cluster.NewProxy).
func ExpireSession(t testing.TB, p *Proxy, sessionID int64) {
	t.Helper()
	c := p.cluster
	c.requireControl("ExpireSession")
	id := fmt.Sprintf("0x%x", sessionID)
	if !c.sessionSeen(id, 5*time.Second) {
		t.Fatalf("zktest: ExpireSession: no server knows session %s", id)
	}
	p.Blackhole()
	defer p.Heal()
	// The server expires a session within its negotiated timeout plus one
	// tick; the negotiated timeout is at most the configured maximum.
	deadline := time.Now().Add(c.cfg.server.MaxSession + 10*time.Second)
	for !c.sessionGone(id) {
		if time.Now().After(deadline) {
			t.Fatalf("zktest: session %s still alive after blackholing its links", id)
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}

// SessionAlive reports whether any running server still tracks sessionID,
// or may: when the running servers do not answer for five seconds, the
// session counts as alive.
func (c *Cluster) SessionAlive(sessionID int64) bool {
	c.t.Helper()
	c.requireControl("SessionAlive")
	return !c.sessionGone(fmt.Sprintf("0x%x", sessionID))
}

// The server's "dump" walks its session tracker's expiry buckets while pings
// move sessions between them, so a live session can be missing from one
// dump. Presence is therefore waited for, and absence needs several dumps
// in a row.
const absentDumps = 4

// sessionSeen waits up to timeout for some server to list the session.
func (c *Cluster) sessionSeen(hexID string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for known, _ := c.sessionKnown(hexID); !known; known, _ = c.sessionKnown(hexID) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	return true
}

// sessionGone reports whether no server lists the session in several
// consecutive dumps. Only a dump that every running server answered counts
// as absence: a server too busy to answer within the timeout may still
// track the session.
func (c *Cluster) sessionGone(hexID string) bool {
	giveUp := time.Now().Add(5 * time.Second)
	for absent := 0; absent < absentDumps; {
		known, complete := c.sessionKnown(hexID)
		switch {
		case known:
			return false
		case complete:
			absent++
		case time.Now().After(giveUp):
			// Servers that keep failing to answer: no evidence that the
			// session is gone, so it is not. That is the safe side for
			// "granted while the session was alive", and ExpireSession
			// keeps waiting until its own deadline.
			return false
		}
		if absent < absentDumps {
			time.Sleep(20 * time.Millisecond) // spacing between looks
		}
	}
	return true
}

// sessionKnown looks for the session in the session trackers that "dump"
// prints. Any server counts: a follower may still know a session the leader
// has expired, and expiry is only certain once none does. complete is false
// when a running server did not answer.
func (c *Cluster) sessionKnown(hexID string) (known, complete bool) {
	complete = true
	for _, s := range c.servers {
		out, err := FourLetter(s.DirectAddr(), "dump", 2*time.Second)
		if err != nil {
			if s.Running() {
				complete = false
			}
			continue
		}
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) > 0 && f[0] == hexID {
				return true, true
			}
		}
	}
	return false, complete
}

// OwnJVMs lists the pids of live JVMs that this test process started. After
// every cluster's cleanup it must be empty.
func OwnJVMs() []int {
	mark := zkserver.OwnerProperty + strconv.Itoa(os.Getpid())
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, arg := range strings.Split(string(b), "\x00") {
			if arg == mark {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
				// A zombie keeps its cmdline empty, so a match is alive.
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// Received returns how many requests (pings included) the server the
// session is connected to has received on it, from the "cons" command; -1
// if no running server lists the session. Tests count a recipe's round
// trips with it.
func (c *Cluster) Received(sessionID int64) int {
	sid := fmt.Sprintf("sid=0x%x", sessionID)
	for _, s := range c.servers {
		out, err := FourLetter(s.DirectAddr(), "cons", 2*time.Second)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(out, "\n") {
			if !strings.Contains(line, sid+",") && !strings.Contains(line, sid+")") {
				continue
			}
			for _, f := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == '(' || r == ')' }) {
				if n, ok := strings.CutPrefix(f, "recved="); ok {
					if v, err := strconv.Atoi(n); err == nil {
						return v
					}
				}
			}
		}
	}
	return -1
}
