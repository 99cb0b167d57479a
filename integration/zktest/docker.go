package zktest

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// dockerImage is the server image for the Docker backend; 3.8 matches the
// Debian package the rest of the suite runs against.
const dockerImage = "zookeeper:3.8"

// dockerServer is a standalone server in a container.
type dockerServer struct {
	ctr  *testcontainers.DockerContainer
	mu   sync.Mutex
	addr string // host:port, which can change when the container restarts
}

// dockerAnswers reports whether a Docker daemon responds. It is only asked
// when no local install exists, so machines with ZooKeeper never touch Docker.
func dockerAnswers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return false
	}
	defer cli.Close()
	_, err = cli.Ping(ctx, client.PingOptions{})
	return err == nil
}

func startDocker(t testing.TB) *dockerServer {
	t.Helper()
	ctx := context.Background()
	ctr, err := testcontainers.Run(ctx, dockerImage,
		testcontainers.WithExposedPorts("2181/tcp"),
		testcontainers.WithEnv(map[string]string{
			"ZOO_4LW_COMMANDS_WHITELIST": "*",
			"ZOO_TICK_TIME":              "200",
			"ZOO_ADMINSERVER_ENABLED":    "false",
		}),
		testcontainers.WithWaitStrategy(wait.ForListeningPort("2181/tcp")),
	)
	testcontainers.CleanupContainer(t, ctr)
	if err != nil {
		t.Fatalf("zktest: docker %s: %v", dockerImage, err)
	}
	d := &dockerServer{ctr: ctr}
	d.refreshAddr(t)
	return d
}

func (d *dockerServer) refreshAddr(t testing.TB) {
	ctx := context.Background()
	host, err := d.ctr.Host(ctx)
	if err != nil {
		t.Fatalf("zktest: docker host: %v", err)
	}
	port, err := d.ctr.MappedPort(ctx, "2181/tcp")
	if err != nil {
		t.Fatalf("zktest: docker port: %v", err)
	}
	d.mu.Lock()
	d.addr = net.JoinHostPort(host, strconv.Itoa(int(port.Num())))
	d.mu.Unlock()
}

func (d *dockerServer) address() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.addr
}

func (d *dockerServer) stop(t testing.TB, kill bool) {
	timeout := 15 * time.Second
	if kill {
		timeout = 0 // docker stop -t 0 sends SIGKILL at once
	}
	if err := d.ctr.Stop(context.Background(), &timeout); err != nil {
		t.Fatalf("zktest: docker stop: %v", err)
	}
}

func (d *dockerServer) start(t testing.TB) {
	if err := d.ctr.Start(context.Background()); err != nil {
		t.Fatalf("zktest: docker start: %v", err)
	}
	d.refreshAddr(t)
}
