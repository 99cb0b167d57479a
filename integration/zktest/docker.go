package zktest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/integration/zkserver"
)

// The Docker backend drives the docker command line, not a Docker client
// library: a user of the library gets this package's module requirements
// in their module graph, and a container library brings some forty
// modules (issue 32). The command line is what a developer with Docker
// has anyway.

// dockerImage is the server image for the Docker backend; 3.8 matches the
// Debian package the rest of the suite runs against.
const dockerImage = "zookeeper:3.8"

// dockerLabel marks the containers the harness starts, with the test
// process's pid as its value: `docker rm -f $(docker ps -aq --filter
// label=org.zkrecipes.zktest)` removes any that a killed test run left.
const dockerLabel = "org.zkrecipes.zktest"

// dockerServer is a standalone server in a container.
type dockerServer struct {
	id   string // the container's ID
	mu   sync.Mutex
	addr string // host:port, which can change when the container restarts
}

// dockerAnswers reports whether a Docker daemon responds. It is only asked
// when no local install exists, so machines with ZooKeeper never touch Docker.
func dockerAnswers(ctx context.Context) bool {
	if _, err := exec.LookPath("docker"); err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := docker(ctx, "version", "--format", "{{.Server.Version}}")
	return err == nil
}

// docker runs the docker command with args and returns what it printed.
func docker(ctx context.Context, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

func startDocker(t testing.TB) *dockerServer {
	t.Helper()
	// Long enough to pull the image on a first run.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := docker(ctx, "run", "--detach",
		"--label", dockerLabel+"="+strconv.Itoa(os.Getpid()),
		"--publish", "127.0.0.1::2181",
		"--env", "ZOO_4LW_COMMANDS_WHITELIST=*",
		"--env", "ZOO_TICK_TIME=200",
		"--env", "ZOO_ADMINSERVER_ENABLED=false",
		dockerImage)
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	d := &dockerServer{id: strings.TrimSpace(out)}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := docker(ctx, "rm", "--force", "--volumes", d.id); err != nil {
			t.Errorf("zktest: %v", err)
		}
	})
	d.refreshAddr(t)
	d.waitServing(t)
	return d
}

// refreshAddr learns the host port the container's 2181 is published on,
// which Docker picks anew at every start.
func (d *dockerServer) refreshAddr(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := docker(ctx, "port", d.id, "2181/tcp")
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	addr, err := publishedAddr(out)
	if err != nil {
		t.Fatalf("zktest: docker port %s: %v", d.id, err)
	}
	d.mu.Lock()
	d.addr = addr
	d.mu.Unlock()
}

// publishedAddr reads the output of `docker port CONTAINER 2181/tcp`, one
// host:port a line ("127.0.0.1:49153", "[::]:49153"), and returns an
// address on the loopback interface to dial.
func publishedAddr(out string) (string, error) {
	for line := range strings.Lines(out) {
		host, port, err := net.SplitHostPort(strings.TrimSpace(line))
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n <= 0 || n > 65535 {
			continue
		}
		if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		return net.JoinHostPort(host, port), nil
	}
	return "", fmt.Errorf("no published port in %q", out)
}

// waitServing waits until the server in the container answers.
func (d *dockerServer) waitServing(t testing.TB) {
	t.Helper()
	const timeout = 2 * time.Minute
	deadline := time.Now().Add(timeout)
	for zkserver.ModeAt(d.address()) == "" {
		if time.Now().After(deadline) {
			t.Fatalf("zktest: docker container %s not serving after %v", d.id, timeout)
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
}

func (d *dockerServer) address() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.addr
}

func (d *dockerServer) stop(t testing.TB, kill bool) {
	t.Helper()
	grace := "15"
	if kill {
		grace = "0" // docker stop -t 0 sends SIGKILL at once
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := docker(ctx, "stop", "--time", grace, d.id); err != nil {
		t.Fatalf("zktest: %v", err)
	}
}

func (d *dockerServer) start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := docker(ctx, "start", d.id); err != nil {
		t.Fatalf("zktest: %v", err)
	}
	d.refreshAddr(t)
}
