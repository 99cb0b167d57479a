package zktest

import (
	"testing"

	harness "github.com/zkrecipes/zkrecipes/internal/zktest"
)

// Server is one ZooKeeper server of a Cluster. Stopping it is how a test
// shows that its service rides out a server going away; its methods fail
// the test when they cannot do what they say.
type Server struct {
	s *harness.Server
	t testing.TB
}

// ID is the server's myid, 1-based.
func (s *Server) ID() int { return s.s.ID }

// DirectAddr is the server's own client address, past every proxy.
func (s *Server) DirectAddr() string { return s.s.DirectAddr() }

// Running reports whether the server is up (not stopped or killed by the
// test).
func (s *Server) Running() bool { return s.s.Running() }

// Mode asks the server for its role: "standalone", "leader", "follower",
// or "" when it does not serve (down, or without a quorum).
func (s *Server) Mode() string { return s.s.Mode() }

// Stop shuts the server down gracefully and waits until it is gone.
func (s *Server) Stop() {
	s.t.Helper()
	s.s.Stop()
}

// Kill kills the server at once (SIGKILL), as a crash or a pulled plug
// would.
func (s *Server) Kill() {
	s.t.Helper()
	s.s.Kill()
}

// Start starts a stopped or killed server on its data and waits until it
// serves again (in an ensemble: until it has joined a quorum).
func (s *Server) Start() {
	s.t.Helper()
	s.s.Start()
}

// Restart is Stop, then Start.
func (s *Server) Restart() {
	s.t.Helper()
	s.s.Restart()
}

// LogTail returns the last n lines of the server's log (none for a server
// in Docker): for a failing test's message.
func (s *Server) LogTail(n int) string { return s.s.LogTail(n) }
