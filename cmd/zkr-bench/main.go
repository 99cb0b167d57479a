// Command zkr-bench measures zkrecipes' locks against a ZooKeeper server,
// beside go-zookeeper's own zk.Lock: latency, throughput, what a waiter
// costs. It prints one line for other tools to read; make bench-peers
// runs it beside Curator to write docs/benchmarks.md.
//
// It was zkr bench: benchmark code has no place in the CLI users ship.
//
// Run zkr-bench --help for the manual.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
)

// Exit statuses, as zkr's.
const (
	exitUsage  = 2   // bad option; nothing was contacted
	exitFailed = 125 // the measurement failed
)

const help = `NAME
    zkr-bench - measure zkrecipes' locks against a ZooKeeper server

SYNOPSIS
    zkr-bench --mode uncontended [--n N] [OPTIONS]
    zkr-bench --mode contended [--clients C] [--duration D] [OPTIONS]
    zkr-bench --mode latch [--rounds R] [OPTIONS]
    zkr-bench --mode queue [--waiters W] [OPTIONS]
    zkr-bench --mode keys [--keys K] [--workers W] [--duration D] [OPTIONS]

DESCRIPTION
    zkr-bench was zkr bench: a command of its own, so that the zkr one
    installs to hold locks carries no benchmark code. make bench-peers
    runs it beside Curator to write docs/benchmarks.md; install it with
        go install github.com/zkrecipes/zkrecipes/cmd/zkr-bench@latest
    or run it from a checkout with go run ./cmd/zkr-bench.

    Runs one measurement on a fresh path, /zkr-bench/MODE-RANDOM, removed
    afterwards, and prints one result line on stdout; progress goes to
    stderr. The line is a contract other tools read: space-separated
    key=value fields, always in this order, integers only. With -o json
    it is one JSON object with the same names in the same order, peer and
    mode as strings, every other value a JSON number:
        {"peer":"zkrecipes","mode":"uncontended","n":1000,"p50_us":..,...}

    --peer zklock runs the same workload with go-zookeeper's own zk.Lock
    instead of this module's Mutex (a new zk.Lock for each acquisition, as
    it cannot be shared), on go-zookeeper's own sessions (as its users run
    it: not over this module's connection layer), so that the two compare
    on your server in one sitting; its line starts peer=zklock. It has no
    leader latch.

    uncontended   one session: 50 warm-up rounds, then N acquire+release of
                  one mutex, each timed.
        peer=zkrecipes mode=uncontended n=N p50_us=.. p99_us=.. ops_per_s=..

    contended     C sessions, one goroutine each, looping acquire/release on
                  one mutex path for D. overlaps counts critical sections
                  entered while another was inside (must be 0).
        peer=zkrecipes mode=contended clients=C acquisitions=.. per_s=..
        min_client=.. max_client=.. overlaps=..

    latch         two LeaderLatch participants (two sessions) on one path;
                  each round the leader closes and the time until the other
                  leads is measured; a fresh latch takes the closed one's
                  place in the queue before the next round.
        peer=zkrecipes mode=latch rounds=R p50_us=.. p99_us=..

    queue         W waiters (goroutines over S sessions, default up to 10)
                  queue behind a holder, which then releases; the time
                  until all have had the lock, divided by W. With all W
                  queued, the goroutines and the memory (live heap and
                  goroutine stacks) zkr-bench holds beyond its idle baseline,
                  divided by W: each waiter's own goroutine included.
        peer=zkrecipes mode=queue waiters=W per_handoff_us=..
        goroutines_per_waiter=.. bytes_per_waiter=..

    keys          a lock per entity: one session, W goroutines, each
                  acquiring and releasing the lock of one of K paths
                  picked at random (mutex.Acquire: no Mutex per key;
                  zklock: a new zk.Lock each time), for D; then, on
                  the same paths, the
                  server's floor for the same work: a bare
                  ephemeral-sequential create and delete per operation
                  on one go-zookeeper session. per_s and the latencies
                  are the lock's; floor_per_s the floor's, so the ratio
                  is measured.
        peer=zkrecipes mode=keys keys=K workers=W per_s=.. p50_us=..
        p99_us=.. floor_per_s=..

OPTIONS
    --mode MODE    uncontended, contended, latch, queue or keys (required).
    --peer P       zkrecipes (default) or zklock: whose lock is measured.
    --n N          uncontended: timed rounds (default 1000).
    --clients C    contended: sessions (default 8).
    --duration D   contended, keys: how long (default 5s; keys runs the
                   lock, then the floor, each for D).
    --rounds R     latch: handovers (default 20).
    --waiters W    queue: waiters (default 100).
    --sessions S   queue: sessions the waiters share (default: up to 10).
    --keys K       keys: distinct lock paths (default 1000).
    --workers W    keys: goroutines (default 32).
    -o FORMAT, --output FORMAT   [ZKR_OUTPUT]
           text (default) or json: the line as one JSON object.

    How to reach the server, as zkr's options of the same names:
    --connect HOST:PORT[,HOST:PORT...]   [ZKR_CONNECT, else ZK_CONNECT]
           ZooKeeper servers (default 127.0.0.1:2181). No chroot:
           go-zookeeper's sessions (--peer zklock, the floor) take none.
    --session-timeout D   [ZKR_SESSION_TIMEOUT]
           session timeout asked of the server (default 10s).
    --dial-timeout D      [ZKR_DIAL_TIMEOUT]
           how long to try to reach ZooKeeper (default 15s).
    --auth-file FILE   [ZKR_AUTH_FILE]
           digest credentials USER:PASSWORD, the first line of FILE.
    [ZKR_AUTH]
           the same credentials from the environment.
    --tls-ca FILE, --tls-cert FILE, --tls-key FILE
           [ZKR_TLS_CA, ZKR_TLS_CERT, ZKR_TLS_KEY]
           connect with TLS, trusting the PEM CA certificates in --tls-ca
           (default: the system's), presenting --tls-cert/--tls-key if
           the servers want a client certificate.
    -h, --help
           show the manual.
EXIT STATUS
    0      measured; the line is on stdout.
    2      Usage error. Nothing was contacted.
    125    the measurement failed (no connection, ZooKeeper error), or
           contended mode saw overlaps (its line is printed all the same).
    130, 143
           interrupted; the path was removed, nothing printed.

ENVIRONMENT
    ZKR_CONNECT (or ZK_CONNECT), ZKR_SESSION_TIMEOUT, ZKR_CONNECT_TIMEOUT,
    ZKR_AUTH, ZKR_AUTH_FILE, ZKR_TLS_CA, ZKR_TLS_CERT, ZKR_TLS_KEY,
    ZKR_OUTPUT
                         the options (see OPTIONS); an option on the
                         command line wins.

EXAMPLES
    zkr-bench --connect 127.0.0.1:2181 --mode uncontended --n 1000
    zkr-bench --mode contended --clients 8 --duration 5s
    zkr-bench -o json --mode keys | jq .per_s
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is one zkr-bench: it parses args, measures, prints the line on
// stdout and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "zkr-bench: %s (see 'zkr-bench --help')\n", fmt.Sprintf(format, a...))
		return exitUsage
	}
	o := benchOptions{peer: "zkrecipes", n: 1000, clients: 8, duration: 5 * time.Second, rounds: 20, waiters: 100, keys: 1000, workers: 32}
	cfg, out := defaultConfig(), newOutput()
	fs := flag.NewFlagSet("zkr-bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.register(fs)
	out.register(fs)
	fs.StringVar(&o.mode, "mode", "", "")
	fs.StringVar(&o.peer, "peer", o.peer, "")
	fs.IntVar(&o.n, "n", o.n, "")
	fs.IntVar(&o.clients, "clients", o.clients, "")
	fs.DurationVar(&o.duration, "duration", o.duration, "")
	fs.IntVar(&o.rounds, "rounds", o.rounds, "")
	fs.IntVar(&o.waiters, "waiters", o.waiters, "")
	fs.IntVar(&o.keys, "keys", o.keys, "")
	fs.IntVar(&o.workers, "workers", o.workers, "")
	fs.IntVar(&o.sessions, "sessions", 0, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, help)
			return 0
		}
		return usage("%v", err)
	}
	if len(fs.Args()) > 0 {
		return usage("unexpected argument %q", fs.Args()[0])
	}
	for _, check := range []func() error{out.check, o.check, cfg.prepare} {
		if err := check(); err != nil {
			return usage("%v", err)
		}
	}

	log := &logger{w: stderr}
	ctx, stop := withSignals()
	defer stop()
	b := &bench{cfg: cfg, log: log, ctx: ctx, peer: o.peer,
		path: "/zkr-bench/" + o.mode + "-" + strconv.FormatUint(rand.Uint64(), 36)}
	line, err := b.run(o)
	b.close()
	if line != nil {
		if werr := out.print(stdout, line); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		var s signalled
		if errors.As(context.Cause(ctx), &s) {
			return 128 + int(s.sig)
		}
		log.printf("%v", err)
		return exitFailed
	}
	return 0
}

// signalled is the cause of the measurement's context once SIGINT, SIGTERM
// or SIGHUP arrived: the run stops, removes its path, and exits as a
// shell reports a command killed by the signal.
type signalled struct{ sig syscall.Signal }

func (s signalled) Error() string { return s.sig.String() }

// withSignals returns a context that ends with the first SIGINT, SIGTERM
// or SIGHUP, and stop, which restores their default handling.
func withSignals() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case s := <-ch:
			cancel(signalled{s.(syscall.Signal)})
		case <-quit:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(quit)
		<-done
		cancel(nil)
	}
}

// logger writes progress to stderr.
type logger struct{ w io.Writer }

func (l *logger) printf(format string, args ...any) {
	fmt.Fprintf(l.w, "zkr-bench: "+format+"\n", args...)
}

// config is how to reach the server: zkr's options of the same names,
// less what a measurement has no use for.
type config struct {
	connect        string
	sessionTimeout time.Duration
	dialTimeout    time.Duration
	authFile       string
	tlsCA          string
	tlsCert        string
	tlsKey         string

	envErr error // a ZKR_ variable that does not parse

	// Set by prepare.
	auth string      // USER:PASSWORD, or empty
	tls  *tls.Config // or nil
	opts []framework.Option
}

// defaultConfig is the defaults, with the ZKR_ environment applied.
func defaultConfig() *config {
	c := &config{
		connect:        "127.0.0.1:2181",
		sessionTimeout: conn.DefaultSessionTimeout,
		dialTimeout:    15 * time.Second,
		auth:           os.Getenv("ZKR_AUTH"),
		authFile:       os.Getenv("ZKR_AUTH_FILE"),
		tlsCA:          os.Getenv("ZKR_TLS_CA"),
		tlsCert:        os.Getenv("ZKR_TLS_CERT"),
		tlsKey:         os.Getenv("ZKR_TLS_KEY"),
	}
	for _, name := range []string{"ZK_CONNECT", "ZKR_CONNECT"} { // the second wins
		if v := os.Getenv(name); v != "" {
			c.connect = v
		}
	}
	for name, d := range map[string]*time.Duration{"ZKR_SESSION_TIMEOUT": &c.sessionTimeout, "ZKR_DIAL_TIMEOUT": &c.dialTimeout} {
		if v := os.Getenv(name); v != "" {
			parsed, err := time.ParseDuration(v)
			if err != nil {
				c.envErr = errors.Join(c.envErr, fmt.Errorf("%s=%q: not a duration", name, v))
				continue
			}
			*d = parsed
		}
	}
	return c
}

func (c *config) register(fs *flag.FlagSet) {
	fs.StringVar(&c.connect, "connect", c.connect, "")
	fs.DurationVar(&c.sessionTimeout, "session-timeout", c.sessionTimeout, "")
	fs.DurationVar(&c.dialTimeout, "dial-timeout", c.dialTimeout, "")
	fs.StringVar(&c.authFile, "auth-file", c.authFile, "")
	fs.StringVar(&c.tlsCA, "tls-ca", c.tlsCA, "")
	fs.StringVar(&c.tlsCert, "tls-cert", c.tlsCert, "")
	fs.StringVar(&c.tlsKey, "tls-key", c.tlsKey, "")
}

// prepare checks the options and loads the files they name, so that a
// mistake is a usage error before anything is contacted.
func (c *config) prepare() error {
	switch {
	case c.envErr != nil:
		return c.envErr
	case c.connect == "":
		return errors.New("--connect: no servers")
	case strings.Contains(c.connect, "/"):
		return fmt.Errorf("--connect %q: no chroot here (go-zookeeper's sessions take none)", c.connect)
	case c.sessionTimeout <= 0 || c.sessionTimeout > conn.MaxSessionTimeout:
		return fmt.Errorf("--session-timeout %v: want more than 0, at most %v", c.sessionTimeout, conn.MaxSessionTimeout)
	case c.dialTimeout <= 0:
		return fmt.Errorf("--dial-timeout %v: must be positive", c.dialTimeout)
	case (c.tlsCert == "") != (c.tlsKey == ""):
		return errors.New("--tls-cert and --tls-key go together")
	}
	if c.authFile != "" {
		b, err := os.ReadFile(c.authFile)
		if err != nil {
			return fmt.Errorf("--auth-file: %w", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		c.auth = strings.TrimSpace(line)
	}
	if c.auth != "" {
		if user, _, ok := strings.Cut(c.auth, ":"); !ok || user == "" {
			return errors.New("credentials (--auth-file, ZKR_AUTH): want USER:PASSWORD")
		}
	}
	if err := c.loadTLS(); err != nil {
		return err
	}
	c.opts = []framework.Option{
		framework.WithSessionTimeout(c.sessionTimeout),
		framework.WithDialTimeout(c.dialTimeout),
		framework.WithDrainTimeout(time.Second),
	}
	if c.auth != "" {
		user, password, _ := strings.Cut(c.auth, ":")
		c.opts = append(c.opts, framework.WithDigestAuth(user, password))
	}
	if c.tls != nil {
		c.opts = append(c.opts, framework.WithTLS(c.tls))
	}
	return nil
}

func (c *config) loadTLS() error {
	if c.tlsCA == "" && c.tlsCert == "" {
		return nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.tlsCA != "" {
		pem, err := os.ReadFile(c.tlsCA)
		if err != nil {
			return fmt.Errorf("--tls-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--tls-ca %s: no PEM certificate in it", c.tlsCA)
		}
	}
	if c.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	c.tls = cfg
	return nil
}

// dial starts one session of this module's, as prepared.
func (c *config) dial(ctx context.Context) (*framework.Client, error) {
	cl, err := framework.Dial(ctx, strings.Split(c.connect, ","), c.opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", c.connect, err)
	}
	return cl, nil
}
