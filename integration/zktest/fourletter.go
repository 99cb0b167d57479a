package zktest

import (
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// FourLetter sends one of ZooKeeper's four-letter-word commands ("srvr",
// "dump", "cons", ...) to addr and returns the reply.
func FourLetter(addr, cmd string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	if err != nil {
		return "", fmt.Errorf("zktest: %s to %s: %w", cmd, addr, err)
	}
	return string(b), nil
}

// serverMode parses the "Mode:" line of a srvr reply: "standalone", "leader",
// "follower", or "" while the server is not serving.
func serverMode(srvr string) string {
	for _, line := range strings.Split(srvr, "\n") {
		if m, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}
