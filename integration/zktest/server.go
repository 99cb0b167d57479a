package zktest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ownerProperty marks every JVM the harness starts with the test process's
// pid, so OwnJVMs can find survivors.
const ownerProperty = "-Dzktest.owner="

// Server is one ZooKeeper server of a Cluster. Its methods are safe for
// concurrent use.
type Server struct {
	// ID is the server's myid (1-based).
	ID int

	cluster    *Cluster
	clientPort int
	peerPort   int
	elecPort   int
	securePort int    // TLS client port; 0 without WithTLS
	dir        string // data dir and config live here and survive Restart

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has been waited for
	logFile *os.File
	docker  *dockerServer // set when the backend is Docker
}

// DirectAddr is the server's own client address, bypassing every proxy.
func (s *Server) DirectAddr() string {
	if s.docker != nil {
		return s.docker.address()
	}
	return fmt.Sprintf("127.0.0.1:%d", s.clientPort)
}

// Running reports whether the server's process is alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Mode asks the server for its role: "standalone", "leader", "follower", or
// "" when it is not serving (down, or without a quorum).
func (s *Server) Mode() string {
	out, err := FourLetter(s.DirectAddr(), "srvr", 3*time.Second) // a busy JVM can take a second
	if err != nil {
		return ""
	}
	return serverMode(out)
}

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
	if s.docker != nil {
		s.docker.start(t)
	} else if err := s.start(); err != nil {
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

func (s *Server) javaArgs(in *install) []string {
	cfg := s.cluster.cfg
	// Small, fast-starting JVMs: tests start many of them on two cores.
	jvm := []string{"-Xms16m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k"}
	if cfg.fullJIT {
		jvm = []string{"-Xms256m", "-Xmx1g"}
	}
	args := append(jvm,
		"-Djava.awt.headless=true",
		ownerProperty+strconv.Itoa(os.Getpid()),
		"-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.extendedTypesEnabled=true", // TTL nodes
		"-Dznode.container.checkIntervalMs="+strconv.Itoa(int(cfg.containerCheck/time.Millisecond)),
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
	)
	for k, v := range cfg.sysProps {
		args = append(args, "-D"+k+"="+v)
	}
	args = append(args, "-cp", in.classpath,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain",
		filepath.Join(s.dir, "zoo.cfg"))
	return args
}

func (s *Server) writeConfig() error {
	cfg := s.cluster.cfg
	data := filepath.Join(s.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	lines := []string{
		"tickTime=" + strconv.Itoa(int(cfg.tickTime/time.Millisecond)),
		"initLimit=10",
		"syncLimit=5",
		"dataDir=" + data,
		"clientPort=" + strconv.Itoa(s.clientPort),
		"clientPortAddress=127.0.0.1",
		"admin.enableServer=false",
		"4lw.commands.whitelist=*",
		"minSessionTimeout=" + strconv.Itoa(int(cfg.minSession/time.Millisecond)),
		"maxSessionTimeout=" + strconv.Itoa(int(cfg.maxSession/time.Millisecond)),
		"maxClientCnxns=0",
		"preAllocSize=1024", // KB: the 64 MB default is wasted on throwaway dirs
	}
	if cfg.durable {
		lines = append(lines, "forceSync=yes")
	} else {
		lines = append(lines, "forceSync=no")
	}
	if len(s.cluster.servers) > 1 {
		for _, o := range s.cluster.servers {
			lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", o.ID, o.peerPort, o.elecPort))
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(s.ID)+"\n"), 0o644); err != nil {
			return err
		}
	}
	lines = append(lines, s.tlsConfigLines()...)
	lines = append(lines, cfg.extraConfig...)
	return os.WriteFile(filepath.Join(s.dir, "zoo.cfg"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		select {
		case <-s.exited:
		default:
			return errors.New("already running")
		}
	}
	in := s.cluster.install
	logFile, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(in.java, s.javaArgs(in)...)
	cmd.Dir = s.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// If the test binary dies without running its cleanups, take the
		// JVM with it rather than leave a server squatting on ports.
		Pdeathsig: syscall.SIGKILL,
		Setpgid:   true,
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(exited)
	}()
	s.cmd, s.exited, s.logFile = cmd, exited, logFile
	return nil
}

// signal sends sig and waits up to grace for the exit, then kills.
func (s *Server) signal(sig syscall.Signal, grace time.Duration) {
	if s.docker != nil {
		s.docker.stop(s.cluster.t, sig == syscall.SIGKILL)
		return
	}
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
		return
	case <-time.After(grace):
	}
	_ = cmd.Process.Kill()
	<-exited
}

// waitServing polls srvr until the server reports a mode, failing the test
// with the server's log if it exits or the deadline passes.
func (s *Server) waitServing(timeout time.Duration) {
	t := s.cluster.t
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if s.Mode() != "" && s.secureListening() {
			return
		}
		if s.docker == nil && !s.Running() {
			t.Fatalf("zktest: server %d exited during start:\n%s", s.ID, s.logTail(40))
		}
		if time.Now().After(deadline) {
			t.Fatalf("zktest: server %d not serving after %v:\n%s", s.ID, timeout, s.logTail(40))
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for an outcome
	}
}

func (s *Server) logTail(n int) string {
	b, err := os.ReadFile(filepath.Join(s.dir, "server.log"))
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logLines is how much of each server's log a failed test prints:
// ZKTEST_LOG_LINES, default 30.
func logLines() int {
	if n, err := strconv.Atoi(os.Getenv("ZKTEST_LOG_LINES")); err == nil && n > 0 {
		return n
	}
	return 30
}
