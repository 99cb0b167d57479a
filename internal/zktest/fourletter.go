package zktest

import (
	"time"

	"github.com/zkrecipes/zkrecipes/zkserver"
)

// FourLetter sends one of ZooKeeper's four-letter-word commands ("srvr",
// "dump", "cons", ...) to addr and returns the reply.
func FourLetter(addr, cmd string, timeout time.Duration) (string, error) {
	return zkserver.FourLetter(addr, cmd, timeout)
}
