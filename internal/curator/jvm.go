package curator

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// InstallHint installs what the Agent needs on Debian.
const InstallHint = "apt-get install -y libcurator-recipes-java libcurator-framework-java libcurator-client-java libcurator-discovery-java default-jdk-headless"

// javaDir is where Debian puts the jars.
const javaDir = "/usr/share/java"

// jars is the Agent's classpath. Their manifests' Class-Path entries bring
// the rest (netty, commons, jackson...). slf4j-simple is the logging binding:
// Curator's and ZooKeeper's warnings go to stderr, which is kept and shown
// when a test fails (see logProps).
var jars = []string{
	"curator-recipes.jar", "curator-framework.jar", "curator-client.jar", "curator-x-discovery.jar",
	"jackson-databind.jar", "jackson-core.jar", "jackson-annotations.jar",
	"zookeeper.jar", "zookeeper-jute.jar", "guava.jar", "slf4j-api.jar", "slf4j-simple.jar",
}

// logProps configure slf4j-simple: warnings and errors only (a healthy run
// logs nothing), timestamped to line up with the server's log.
var logProps = []string{
	"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
	"-Dorg.slf4j.simpleLogger.showDateTime=true",
	"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
}

// ownerProperty marks every Agent JVM with the pid of the test process that
// started it, so a survivor can be traced back (ps, /proc/*/cmdline).
const ownerProperty = "-Dzkrecipes.curator.owner="

// JVM is a compiled Agent, ready to start processes.
type JVM struct {
	java      string // java binary
	classpath string // compiled classes, then the jars
}

var (
	buildOnce sync.Once
	built     *JVM
	buildErr  error
)

// Agent returns what starts Agent processes, compiling java/*.java on the
// first call of the test process (or reusing an earlier run's classes for
// the same sources, compiler and jars; see compile). Missing tools or jars
// fail t with the install command.
func Agent(t testing.TB) *JVM {
	t.Helper()
	buildOnce.Do(func() { built, buildErr = build() })
	if buildErr != nil {
		t.Fatalf("curator: %v", buildErr)
	}
	return built
}

func build() (*JVM, error) {
	javac, java, err := findJDK()
	if err != nil {
		return nil, err
	}
	var jarPaths []string
	for _, j := range jars {
		p := filepath.Join(javaDir, j)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("no %s (Curator 5.4 and its dependencies come from Debian)\n  install with: %s", p, InstallHint)
		}
		jarPaths = append(jarPaths, p)
	}
	jarCP := strings.Join(jarPaths, string(os.PathListSeparator))
	srcDir, err := sourceDir()
	if err != nil {
		return nil, err
	}
	sources, err := filepath.Glob(filepath.Join(srcDir, "*.java"))
	if err != nil || len(sources) == 0 {
		return nil, fmt.Errorf("no Java sources in %s", srcDir)
	}
	key, err := cacheKey(javac, sources, jarPaths)
	if err != nil {
		return nil, err
	}
	classes, err := compile(javac, jarCP, sources, key)
	if err != nil {
		return nil, err
	}
	return &JVM{java: java, classpath: classes + string(os.PathListSeparator) + jarCP}, nil
}

// findJDK finds javac and the java next to it: JAVA_HOME first, as the JDK
// tools themselves do, then PATH.
func findJDK() (javac, java string, err error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		javac, java = filepath.Join(home, "bin", "javac"), filepath.Join(home, "bin", "java")
		if isFile(javac) && isFile(java) {
			return javac, java, nil
		}
	}
	if javac, err = exec.LookPath("javac"); err != nil {
		return "", "", fmt.Errorf("no javac on PATH (the Agent is compiled from source)\n  install with: %s", InstallHint)
	}
	if java, err = exec.LookPath("java"); err != nil {
		return "", "", fmt.Errorf("no java on PATH\n  install with: %s", InstallHint)
	}
	return javac, java, nil
}

// sourceDir is this package's java/ directory, found from this file's own
// path so that tests of any package (each runs in its own directory) find it.
func sourceDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the curator package's source (runtime.Caller failed)")
	}
	dir := filepath.Join(filepath.Dir(file), "java")
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("no Java sources at %s (built with -trimpath? the Agent is compiled from this package's java/ directory)", dir)
	}
	return dir, nil
}

// cacheKey hashes everything the compiled classes depend on: the sources, the
// compiler, and the jars compiled against (by size and time, which change
// when a package upgrade replaces them).
func cacheKey(javac string, sources, jarPaths []string) (string, error) {
	h := sha256.New()
	real, err := filepath.EvalSymlinks(javac)
	if err != nil {
		real = javac
	}
	fmt.Fprintf(h, "javac %s\n", real)
	for _, s := range sources {
		b, err := os.ReadFile(s)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "src %s %d\n", filepath.Base(s), len(b))
		h.Write(b)
	}
	for _, j := range jarPaths {
		st, err := os.Stat(j) // follows Debian's version symlinks
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "jar %s %d %d\n", j, st.Size(), st.ModTime().UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil))[:20], nil
}

// compile returns a directory holding the compiled Agent for key, compiling
// it unless an earlier run already did.
//
// Where: os.TempDir()/zkrecipes-curator-<uid>/agent-<key>. A t.TempDir would
// vanish when the first test using it ends, and a directory removed at
// process exit would need a hook `go test` does not offer; a cache keyed by a
// hash of the inputs instead survives, is reused by every later run (javac
// costs ~1s), and never serves stale classes, because any change of input is
// a new key. Concurrent test processes (go test runs packages in parallel)
// each compile into a private directory and rename it into place: the rename
// is atomic, so a cache directory, once visible, is complete; the loser of a
// race discards its copy. The per-user parent is 0700 and checked to be ours,
// so another user of a shared /tmp cannot plant classes for us to run.
func compile(javac, jarCP string, sources []string, key string) (string, error) {
	root := filepath.Join(os.TempDir(), "zkrecipes-curator-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", err
	}
	if err := checkPrivate(root); err != nil {
		return "", err
	}
	final := filepath.Join(root, "agent-"+key)
	if isFile(filepath.Join(final, "zkrecipes", "Agent.class")) {
		return final, nil
	}
	tmp, err := os.MkdirTemp(root, "build-")
	if err != nil {
		return "", err
	}
	args := append([]string{"-encoding", "UTF-8", "-Xlint:all,-path", "-d", tmp, "-cp", jarCP}, sources...)
	out, err := exec.Command(javac, args...).CombinedOutput()
	if err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("javac %s: %v\n%s", strings.Join(sources, " "), err, out)
	}
	if err := os.Rename(tmp, final); err != nil {
		os.RemoveAll(tmp)
		if isFile(filepath.Join(final, "zkrecipes", "Agent.class")) {
			return final, nil // another test process got there first
		}
		return "", err
	}
	return final, nil
}

// checkPrivate refuses a cache directory that someone else owns or could
// write to.
func checkPrivate(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || !ok || int(sys.Uid) != os.Getuid() || st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("refusing agent cache %s: not a directory of ours with mode 0700 (remove it)", dir)
	}
	return nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
