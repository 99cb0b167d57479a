package zktest

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// Containers starts standalone servers in containers. The harness holds no
// container library of its own: the library's module must not require one
// (docs/modules.md), so the test kit's module (github.com/zkrecipes/zkrecipes/zktest)
// passes one built on testcontainers-go through WithContainers.
type Containers interface {
	// Available returns nil when the container engine answers within ctx.
	Available(ctx context.Context) error
	// Start starts one standalone server configured by cfg, stopped with t's
	// cleanup, and returns once the container runs.
	Start(t testing.TB, cfg ContainerConfig) Container
}

// ContainerConfig is what a container's server is configured with: the
// same settings a local server gets.
type ContainerConfig struct {
	TickTime time.Duration
	// ZooCfg holds zoo.cfg lines beyond the tick: the session bounds, then
	// WithConfig's lines.
	ZooCfg []string
	// JVMFlags holds the server JVM's -D flags: TTL nodes, the container
	// check interval, then WithSystemProperty's.
	JVMFlags []string
}

// Container is one server in a container, which the harness can stop and
// start again.
type Container interface {
	// Addr is the server's client address on the host, which may change
	// when the container starts again.
	Addr() string
	// Stop stops the container: SIGTERM with a grace period, or SIGKILL at
	// once when kill is set.
	Stop(t testing.TB, kill bool)
	// Start starts a stopped container on the same data.
	Start(t testing.TB)
}

// WithContainers gives the harness a way to run servers in containers: it
// is used when no local install exists, or always with WithContainersFirst.
func WithContainers(c Containers) Option { return func(cfg *config) { cfg.containers = c } }

// WithContainersFirst runs the servers in containers even where a local
// install exists; the test fails when the engine does not answer.
func WithContainersFirst() Option { return func(cfg *config) { cfg.containersFirst = true } }

// containerConfig is the part of cfg a container's server takes.
func (cfg *config) containerConfig() ContainerConfig {
	s := cfg.server
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	zoo := append([]string{"minSessionTimeout=" + ms(s.MinSession), "maxSessionTimeout=" + ms(s.MaxSession)}, s.Extra...)
	jvm := []string{"-Dzookeeper.extendedTypesEnabled=true", "-Dznode.container.checkIntervalMs=" + ms(s.ContainerCheck)}
	for k, v := range s.SysProps {
		jvm = append(jvm, "-D"+k+"="+v)
	}
	return ContainerConfig{TickTime: s.TickTime, ZooCfg: zoo, JVMFlags: jvm}
}
