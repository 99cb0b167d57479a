// Package zkserver runs local Apache ZooKeeper 3.8 servers from the jars on
// this machine: Debian's zookeeper package (/usr/share/java) or an Apache
// tarball named by ZK_HOME. It writes each server's configuration, picks its
// ports, starts and stops its JVM and keeps its log.
//
// It is public so that zkr dev and the test kit stand on it as any program
// could; it imports no testing code, so that zkr dev can start a server without
// linking the test harness into the binary users ship; internal/zktest
// wraps it with faults, ensembles and t.Cleanup for the tests.
package zkserver

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// InstallHint is the command that installs a server on the Debian machines
// this project is built on, for the test harness (which takes ZK_CONNECT).
const InstallHint = debianInstall + "  (or set ZK_HOME to an Apache ZooKeeper tarball, or ZK_CONNECT to a running server)"

// debianInstall installs Debian's zookeeper package.
const debianInstall = "apt-get update && apt-get install -y zookeeper"

// devInstallHint is StartDev's: zkr dev ignores ZK_CONNECT (it always
// starts a server), so a running server is for zkr's clients, not for it.
const devInstallHint = debianInstall + "  (or set ZK_HOME to an Apache ZooKeeper tarball)\n" +
	"  or, to use a server that runs already, skip zkr dev: zkr --connect HOST:PORT (or ZKR_CONNECT) ..."

// DebianJavaDir is where Debian's zookeeper package puts its jars.
const DebianJavaDir = "/usr/share/java"

// nettyCodecJar is the Netty jar that Debian's zookeeper.jar manifest leaves
// out: without it NettyServerCnxnFactory cannot initialise a TLS channel
// (NoClassDefFoundError: io/netty/handler/codec/ByteToMessageDecoder).
const nettyCodecJar = "netty-codec.jar"

// OwnerProperty marks every JVM started here with the starting process's
// pid (OwnerProperty + pid), so that a test can find survivors.
const OwnerProperty = "-Dzktest.owner="

// Install says how to start a ZooKeeper server JVM from files on this
// machine.
type Install struct {
	Java      string // the java binary
	Classpath string
	ConfDir   string // a ZK_HOME tarball's conf/ (its logging config); "" for Debian's jars
}

// Locate finds a local install: ZK_HOME if it is set (and then only it: a
// ZK_HOME that does not work is a mistake to report, not to paper over), or
// Debian's jars.
func Locate() (*Install, error) {
	java, err := findJava()
	if err != nil {
		return nil, err
	}
	if home := os.Getenv("ZK_HOME"); home != "" {
		jars, _ := filepath.Glob(filepath.Join(home, "lib", "*.jar"))
		top, _ := filepath.Glob(filepath.Join(home, "zookeeper-*.jar"))
		if len(jars)+len(top) == 0 {
			return nil, fmt.Errorf("ZK_HOME=%s: no jars under %s/lib", home, home)
		}
		cp := []string{filepath.Join(home, "conf")}
		cp = append(cp, top...)
		cp = append(cp, filepath.Join(home, "lib", "*"))
		return &Install{Java: java, Classpath: strings.Join(cp, string(os.PathListSeparator)), ConfDir: filepath.Join(home, "conf")}, nil
	}
	zkJar := filepath.Join(DebianJavaDir, "zookeeper.jar")
	if _, err := os.Stat(zkJar); err != nil {
		return nil, fmt.Errorf("no %s: %w", zkJar, err)
	}
	// Debian's zookeeper.jar names its dependencies in its manifest; it only
	// lacks an slf4j binding, without which the server logs nothing at all.
	cp := []string{zkJar}
	for _, binding := range []string{"slf4j-simple.jar", "slf4j-nop.jar"} {
		if p := filepath.Join(DebianJavaDir, binding); fileExists(p) {
			cp = append(cp, p)
			break
		}
	}
	return &Install{Java: java, Classpath: strings.Join(cp, string(os.PathListSeparator))}, nil
}

// ForTLS returns the install completed with what a TLS port needs.
func (in *Install) ForTLS() (*Install, error) {
	if in.ConfDir != "" { // a ZK_HOME tarball: its lib/ has Netty whole
		return in, nil
	}
	jar := filepath.Join(DebianJavaDir, nettyCodecJar)
	if !fileExists(jar) {
		return nil, fmt.Errorf("no %s (apt-get install -y libnetty-java)", jar)
	}
	out := *in
	out.Classpath += string(os.PathListSeparator) + jar
	return &out, nil
}

func findJava() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if p := filepath.Join(home, "bin", "java"); fileExists(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", errors.New("no java on PATH (apt-get install -y default-jre-headless)")
	}
	return p, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// Config is what every server of one ensemble shares.
type Config struct {
	TickTime       time.Duration
	SyncLimit      int           // ticks a follower may lag the leader before it is dropped; 0: 5
	MinSession     time.Duration // bounds the server negotiates session timeouts into
	MaxSession     time.Duration
	ContainerCheck time.Duration // how often empty container nodes are deleted
	Durable        bool          // fsync every write
	FullJIT        bool          // production JVM flags instead of quick-start ones
	CPUs           string        // taskset(1) CPU list the JVM is confined to; "" for any
	Extra          []string      // raw zoo.cfg lines, appended last
	SysProps       map[string]string
}

// DefaultConfig is a server tuned for tests: a 200ms tick (expiry is checked
// once per tick), session timeouts from 1s to 60s, no fsync.
func DefaultConfig() Config {
	return Config{
		TickTime:       200 * time.Millisecond,
		MinSession:     time.Second,
		MaxSession:     60 * time.Second,
		ContainerCheck: time.Second,
		SysProps:       map[string]string{},
	}
}

// Server is one ZooKeeper server JVM. Set the exported fields before the
// first WriteConfig; its methods are then safe for concurrent use.
type Server struct {
	ID         int // myid, 1-based
	ClientPort int
	PeerPort   int
	ElecPort   int
	Dir        string // data dir, config and log; survive a restart
	Install    *Install
	Config     *Config
	// PeerPorts, when set, names the port this server dials to reach another
	// member's quorum port, by that member's ID (a proxy in between, say);
	// members it does not name are reached at their own PeerPort.
	PeerPorts map[int]int
	// ElecPorts is PeerPorts for the election ports.
	ElecPorts map[int]int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

// DirectAddr is the server's client address.
func (s *Server) DirectAddr() string { return "127.0.0.1:" + strconv.Itoa(s.ClientPort) }

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
func (s *Server) Mode() string { return ModeAt(s.DirectAddr()) }

// ModeAt asks the server at addr for its role, as Server.Mode.
func ModeAt(addr string) string {
	out, err := FourLetter(addr, "srvr", 3*time.Second) // a busy JVM can take a second
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

// WriteConfig writes zoo.cfg (and myid) under Dir. ensemble lists every
// member when there is more than one; extra lines go before Config.Extra.
func (s *Server) WriteConfig(ensemble []*Server, extra []string) error {
	cfg := s.Config
	syncLimit := cfg.SyncLimit
	if syncLimit <= 0 {
		syncLimit = 5
	}
	data := filepath.Join(s.Dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	lines := []string{
		"tickTime=" + strconv.Itoa(int(cfg.TickTime/time.Millisecond)),
		"initLimit=10",
		"syncLimit=" + strconv.Itoa(syncLimit),
		"dataDir=" + data,
		"clientPort=" + strconv.Itoa(s.ClientPort),
		"clientPortAddress=127.0.0.1",
		"admin.enableServer=false",
		"4lw.commands.whitelist=*",
		"minSessionTimeout=" + strconv.Itoa(int(cfg.MinSession/time.Millisecond)),
		"maxSessionTimeout=" + strconv.Itoa(int(cfg.MaxSession/time.Millisecond)),
		"maxClientCnxns=0",
		"preAllocSize=1024", // KB: the 64 MB default is wasted on throwaway dirs
	}
	if cfg.Durable {
		lines = append(lines, "forceSync=yes")
	} else {
		lines = append(lines, "forceSync=no")
	}
	if len(ensemble) > 1 {
		for _, o := range ensemble {
			peer, elec := o.PeerPort, o.ElecPort
			if p, ok := s.PeerPorts[o.ID]; ok && o.ID != s.ID {
				peer = p
			}
			if p, ok := s.ElecPorts[o.ID]; ok && o.ID != s.ID {
				elec = p
			}
			lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", o.ID, peer, elec))
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(s.ID)+"\n"), 0o644); err != nil {
			return err
		}
	}
	lines = append(lines, extra...)
	lines = append(lines, cfg.Extra...)
	return os.WriteFile(filepath.Join(s.Dir, "zoo.cfg"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

func (s *Server) javaArgs() []string {
	cfg := s.Config
	// Small, fast-starting JVMs: tests start many of them on two cores.
	jvm := []string{"-Xms16m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k"}
	if cfg.FullJIT {
		jvm = []string{"-Xms256m", "-Xmx1g"}
	}
	args := append(jvm,
		"-Djava.awt.headless=true",
		OwnerProperty+strconv.Itoa(os.Getpid()),
		"-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.extendedTypesEnabled=true", // TTL nodes
		"-Dznode.container.checkIntervalMs="+strconv.Itoa(int(cfg.ContainerCheck/time.Millisecond)),
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
	)
	for k, v := range cfg.SysProps {
		args = append(args, "-D"+k+"="+v)
	}
	return append(args, "-cp", s.Install.Classpath,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain",
		filepath.Join(s.Dir, "zoo.cfg"))
}

// Start starts the server's JVM; it does not wait for it to serve.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		select {
		case <-s.exited:
		default:
			return errors.New("already running")
		}
	}
	logFile, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.Install.Java, s.javaArgs()...)
	if s.Config.CPUs != "" {
		// taskset execs the JVM: the process, its pid and its signals are
		// the JVM's, and every thread it starts inherits the mask.
		cmd = exec.Command("taskset", append([]string{"-c", s.Config.CPUs, s.Install.Java}, s.javaArgs()...)...)
	}
	cmd.Dir = s.Dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// If the starting process dies without stopping its servers, take
		// the JVM with it rather than leave a server squatting on ports.
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
	s.cmd, s.exited = cmd, exited
	return nil
}

// Signal sends sig and waits up to grace for the exit, then kills.
func (s *Server) Signal(sig syscall.Signal, grace time.Duration) {
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

// WaitServing polls until the server reports a mode and ready (if not nil)
// agrees. It fails with the server's log if the JVM exits or timeout
// passes.
func (s *Server) WaitServing(timeout time.Duration, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if s.Mode() != "" && (ready == nil || ready()) {
			return nil
		}
		if !s.Running() {
			return fmt.Errorf("server %d exited during start:\n%s", s.ID, s.LogTail(40))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server %d not serving after %v:\n%s", s.ID, timeout, s.LogTail(40))
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for an outcome
	}
}

func (s *Server) logPath() string { return filepath.Join(s.Dir, "server.log") }

// LogPath is the server's log file: every start appends to it.
func (s *Server) LogPath() string { return s.logPath() }

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	b, err := os.ReadFile(s.logPath())
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

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
		return "", fmt.Errorf("%s to %s: %w", cmd, addr, err)
	}
	return string(b), nil
}

// FreePorts reserves n distinct free TCP ports on 127.0.0.1 for the caller
// until it calls release (more than once is safe). They are drawn below the
// kernel's range of ephemeral ports (ip_local_port_range), from which every
// outgoing connection of every test takes its local port: a port from
// that range, released, is soon some client's, and the server that was
// to listen on it fails with "Address already in use".
//
// A port is free when nothing listens on it and no other caller, in this
// process or another (go test runs packages in parallel), holds it: the
// port is only listened on by its server a second after the draw and after
// each restart, and two test binaries drawing at once handed one port to
// two servers (CI, 2026-11-28). The hold is an flock on a file per port in
// the system's temporary directory, which the kernel drops when the
// process dies, so a killed test run leaves nothing held.
func FreePorts(n int) (ports []int, release func(), err error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var held []*os.File
	release = sync.OnceFunc(func() {
		for _, f := range held {
			f.Close() // closing the last descriptor drops the flock
		}
	})
	lo, hi := listenRange()
	ports = make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries >= 1000*n {
			release()
			return nil, func() {}, fmt.Errorf("no free port in %d-%d after %d draws", lo, hi, tries)
		}
		port := lo + rand.IntN(hi-lo)
		f, ok := reservePort(port)
		if !ok {
			continue // another caller holds it: draw again
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			f.Close()
			continue // taken by someone outside the pool: draw again
		}
		held = append(held, f)
		ls = append(ls, l)
		ports = append(ports, port)
	}
	return ports, release, nil
}

// reservePort takes the pool's hold on port, or reports that another open
// file (in any process, this one included) has it.
func reservePort(port int) (*os.File, bool) {
	dir := filepath.Join(os.TempDir(), "zkrecipes-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, false
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}

// listenRange is where FreePorts draws from: the ports below the kernel's
// ephemeral range, and above the well-known ones.
func listenRange() (lo, hi int) {
	lo, hi = 10000, 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if first, err := strconv.Atoi(f[0]); err == nil && first > lo+1000 {
				hi = first
			}
		}
	}
	return lo, hi
}
