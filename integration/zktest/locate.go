package zktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// InstallHint is the command that installs what the harness needs on the
// Debian machines this project is built on.
const InstallHint = "apt-get update && apt-get install -y zookeeper  (or set ZK_HOME to an Apache ZooKeeper tarball, or ZK_CONNECT to a running server)"

// debianJavaDir is where Debian's zookeeper package puts its jars.
var debianJavaDir = "/usr/share/java"

// install says how to start a ZooKeeper server JVM from files on this machine.
type install struct {
	java      string // java binary
	classpath string
	confDir   string // optional: holds a logging config for tarball installs
}

// backend is where the servers for this run come from.
type backend int

const (
	backendLocal backend = iota + 1
	backendExternal
	backendDocker
)

// locate decides, once per call, which backend serves a test. It never skips:
// with nothing usable it fails the test with the install command.
func locate(t testing.TB) (backend, *install) {
	t.Helper()
	if os.Getenv("ZK_CONNECT") != "" {
		return backendExternal, nil
	}
	if in, err := findLocalInstall(); err == nil {
		return backendLocal, in
	} else if os.Getenv("ZK_HOME") != "" {
		// A ZK_HOME that does not work is a mistake the user wants to hear about,
		// not something to paper over with Docker.
		t.Fatalf("zktest: ZK_HOME is set but unusable: %v", err)
	}
	if dockerAnswers(context.Background()) {
		return backendDocker, nil
	}
	t.Fatalf("zktest: no ZooKeeper server available: no ZK_CONNECT, no local install (ZK_HOME or %s/zookeeper.jar), no Docker daemon.\n  install one with: %s", debianJavaDir, InstallHint)
	return 0, nil
}

func findLocalInstall() (*install, error) {
	java, err := findJava()
	if err != nil {
		return nil, err
	}
	if home := os.Getenv("ZK_HOME"); home != "" {
		jars, _ := filepath.Glob(filepath.Join(home, "lib", "*.jar"))
		top, _ := filepath.Glob(filepath.Join(home, "zookeeper-*.jar"))
		if len(jars)+len(top) == 0 {
			return nil, fmt.Errorf("no jars under %s/lib", home)
		}
		cp := []string{filepath.Join(home, "conf")}
		cp = append(cp, top...)
		cp = append(cp, filepath.Join(home, "lib", "*"))
		return &install{java: java, classpath: strings.Join(cp, string(os.PathListSeparator)), confDir: filepath.Join(home, "conf")}, nil
	}
	zkJar := filepath.Join(debianJavaDir, "zookeeper.jar")
	if _, err := os.Stat(zkJar); err != nil {
		return nil, fmt.Errorf("no %s: %w", zkJar, err)
	}
	// Debian's zookeeper.jar names its dependencies in its manifest; it only
	// lacks an slf4j binding, without which the server logs nothing at all.
	cp := []string{zkJar}
	for _, binding := range []string{"slf4j-simple.jar", "slf4j-nop.jar"} {
		if p := filepath.Join(debianJavaDir, binding); fileExists(p) {
			cp = append(cp, p)
			break
		}
	}
	return &install{java: java, classpath: strings.Join(cp, string(os.PathListSeparator))}, nil
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
