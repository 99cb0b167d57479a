package zktest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	harness "github.com/zkrecipes/zkrecipes/internal/zktest"
)

// DefaultImage is the image a server in Docker runs unless WithImage names
// another: the official image's 3.8 line, the version the local path runs
// on Debian.
const DefaultImage = "zookeeper:3.8"

// dockerLabel marks the containers the kit starts, with the test process's
// pid as its value, so that any a killed test run left can be found:
// docker ps -a --filter label=org.zkrecipes.zktest.
const dockerLabel = "org.zkrecipes.zktest"

const clientPort = "2181/tcp"

// DockerAvailable returns nil when a Docker daemon answers within ctx, and
// otherwise why not: a test that must run in Docker can skip with that
// reason.
func DockerAvailable(ctx context.Context) (err error) {
	// testcontainers-go panics on some machines without Docker while it
	// looks for a daemon; that is an answer too.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("no Docker daemon: %v", r)
		}
	}()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return fmt.Errorf("no Docker daemon: %w", err)
	}
	defer p.Close()
	if err := p.Health(ctx); err != nil {
		return fmt.Errorf("the Docker daemon does not answer: %w", err)
	}
	return nil
}

// docker runs the harness's servers in containers through
// testcontainers-go.
type docker struct{ image string }

var _ harness.Containers = docker{}

func (docker) Available(ctx context.Context) error { return DockerAvailable(ctx) }

// Start runs one standalone server, configured as the local servers are
// (tick, session bounds, zoo.cfg lines, JVM flags), with every four-letter
// command allowed: ExpireSession reads the server's session list through
// "dump".
func (d docker) Start(t testing.TB, cfg harness.ContainerConfig) harness.Container {
	t.Helper()
	// Long enough to pull the image on a first run.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	env := map[string]string{
		"ZOO_TICK_TIME":              strconv.FormatInt(cfg.TickTime.Milliseconds(), 10),
		"ZOO_4LW_COMMANDS_WHITELIST": "*",
		"ZOO_ADMINSERVER_ENABLED":    "false",
		"ZOO_CFG_EXTRA":              strings.Join(cfg.ZooCfg, " "),
		"JVMFLAGS":                   strings.Join(cfg.JVMFlags, " "),
	}
	ctr, err := testcontainers.Run(ctx, d.image,
		testcontainers.WithExposedPorts(clientPort),
		testcontainers.WithEnv(env),
		testcontainers.WithLabels(map[string]string{dockerLabel: strconv.Itoa(os.Getpid())}),
		testcontainers.WithWaitStrategy(wait.ForListeningPort(clientPort)),
	)
	// Registered before the error is looked at: a container that started
	// but never became ready is removed too.
	testcontainers.CleanupContainer(t, ctr)
	if err != nil {
		t.Fatalf("zktest: start %s in Docker: %v", d.image, err)
	}
	c := &container{ctr: ctr}
	c.refreshAddr(t)
	return c
}

// container is one server in Docker.
type container struct {
	ctr *testcontainers.DockerContainer
	mu  sync.Mutex
	// addr is the host address of the container's client port, which
	// Docker picks anew at every start.
	addr string
}

func (c *container) Addr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addr
}

func (c *container) refreshAddr(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr, err := c.ctr.PortEndpoint(ctx, clientPort, "")
	if err != nil {
		t.Fatalf("zktest: the container's client port: %v", err)
	}
	c.mu.Lock()
	c.addr = addr
	c.mu.Unlock()
}

// Stop stops the container: SIGTERM and 15 s of grace, or SIGKILL at once.
func (c *container) Stop(t testing.TB, kill bool) {
	t.Helper()
	grace := 15 * time.Second
	if kill {
		grace = 0 // docker stop with no grace sends SIGKILL at once
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.ctr.Stop(ctx, &grace); err != nil {
		t.Fatalf("zktest: stop the container: %v", err)
	}
}

// Start starts the stopped container on its data.
func (c *container) Start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.ctr.Start(ctx); err != nil {
		t.Fatalf("zktest: start the container: %v", err)
	}
	c.refreshAddr(t)
}
