package zktest

import (
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zkrecipes/zkrecipes/zkserver"
)

// Server is one ZooKeeper server of a Cluster. Its methods are safe for
// concurrent use.
type Server struct {
	// ID is the server's myid (1-based).
	ID int

	cluster    *Cluster
	proc       *zkserver.Server // the local JVM; nil in a container
	securePort int              // TLS client port; 0 without WithTLS
	container  Container        // set when the server runs in a container

	containerDown atomic.Bool // the container was stopped and not started again
}

// DirectAddr is the server's own client address, bypassing every proxy.
func (s *Server) DirectAddr() string {
	if s.container != nil {
		return s.container.Addr()
	}
	return s.proc.DirectAddr()
}

// Running reports whether the server's process is alive; in a container,
// whether the harness has not stopped it.
func (s *Server) Running() bool {
	if s.container != nil {
		return !s.containerDown.Load()
	}
	return s.proc != nil && s.proc.Running()
}

// Mode asks the server for its role: "standalone", "leader", "follower", or
// "" when it is not serving (down, or without a quorum).
func (s *Server) Mode() string { return zkserver.ModeAt(s.DirectAddr()) }

// Stop shuts the server down gracefully (SIGTERM) and waits for it to exit.
func (s *Server) Stop() {
	s.cluster.t.Helper()
	s.cluster.requireControl("Stop")
	s.signal(syscall.SIGTERM, 15*time.Second)
}

// Kill kills the server with SIGKILL (kill -9) and waits for it to exit.
func (s *Server) Kill() {
	s.cluster.t.Helper()
	s.cluster.requireControl("Kill")
	s.signal(syscall.SIGKILL, 15*time.Second)
}

// Start starts a stopped or killed server on the same ports and data, and
// waits until it serves again (for an ensemble: until it has joined a quorum).
func (s *Server) Start() {
	t := s.cluster.t
	t.Helper()
	s.cluster.requireControl("Start")
	if s.container != nil {
		s.container.Start(t)
		s.containerDown.Store(false)
	} else if err := s.proc.Start(); err != nil {
		t.Fatalf("zktest: start server %d: %v", s.ID, err)
	}
	s.waitServing(s.cluster.cfg.startTimeout)
}

// Restart stops the server gracefully and starts it again on the same data.
func (s *Server) Restart() {
	s.cluster.t.Helper()
	s.Stop()
	s.Start()
}

// signal sends sig and waits up to grace for the exit, then kills.
func (s *Server) signal(sig syscall.Signal, grace time.Duration) {
	if s.container != nil {
		s.containerDown.Store(true)
		s.container.Stop(s.cluster.t, sig == syscall.SIGKILL)
		return
	}
	s.proc.Signal(sig, grace)
}

// waitServing waits until the server reports a mode (and its TLS port, if
// any, listens), failing the test with the server's log if it exits or the
// deadline passes.
func (s *Server) waitServing(timeout time.Duration) {
	t := s.cluster.t
	t.Helper()
	if s.container != nil {
		deadline := time.Now().Add(timeout)
		for s.Mode() == "" {
			if time.Now().After(deadline) {
				t.Fatalf("zktest: server in a container not serving at %s after %v", s.DirectAddr(), timeout)
			}
			time.Sleep(50 * time.Millisecond) // polling interval
		}
		return
	}
	if err := s.proc.WaitServing(timeout, s.secureListening); err != nil {
		t.Fatalf("zktest: %v", err)
	}
}

func (s *Server) logTail(n int) string {
	if s.proc == nil {
		return "(no log: the server runs in a container)"
	}
	return s.proc.LogTail(n)
}

// LogTail returns the last n lines of the server's log, across restarts.
func (s *Server) LogTail(n int) string { return s.logTail(n) }

// LogPath is the server's log file, which every start appends to; "" on
// a server in a container.
func (s *Server) LogPath() string {
	if s.proc == nil {
		return ""
	}
	return s.proc.LogPath()
}

// SnapshotDir is where the server keeps its snapshots and transaction logs
// (dataDir/version-2), which survive a Stop or Kill and are what Start
// restores from; "" for a server in a container.
func (s *Server) SnapshotDir() string {
	if s.proc == nil {
		return ""
	}
	return filepath.Join(s.proc.Dir, "data", "version-2")
}

// logLines is how much of each server's log a failed test prints:
// ZKTEST_LOG_LINES, default 30.
func logLines() int {
	if n, err := strconv.Atoi(os.Getenv("ZKTEST_LOG_LINES")); err == nil && n > 0 {
		return n
	}
	return 30
}
