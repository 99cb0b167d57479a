package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
)

const globalOptionsHelp = `    Global options go before the subcommand or after it (before PATH).
    Each has an environment variable (in brackets); an option given on the
    command line wins over it.

    --connect HOST:PORT[,HOST:PORT...]   [ZKR_CONNECT, else ZK_CONNECT]
           ZooKeeper servers (default 127.0.0.1:2181).
    --session-timeout D   [ZKR_SESSION_TIMEOUT]
           session timeout asked of the server (default 10s). A holder cut
           off from ZooKeeper stops COMMAND after 2/3 of it; a dead zkr's
           lock passes on after all of it. Must be at least 900ms, to
           leave time to stop COMMAND in between.
    --connect-timeout D   [ZKR_CONNECT_TIMEOUT]
           how long to try to reach ZooKeeper at start (default 15s).
    --namespace NS   [ZKR_NAMESPACE]
           prefix every path with /NS, as Curator's namespace.
    --auth-file FILE   [ZKR_AUTH_FILE]
           digest credentials USER:PASSWORD, the first line of FILE, sent on
           every connection.
    [ZKR_AUTH]
           the same credentials, USER:PASSWORD, from the environment.
    --auth USER:PASSWORD
           the same on the command line, where every local user can read
           it (ps): zkr warns. Prefer --auth-file or ZKR_AUTH.
           Give one of the three: --auth or --auth-file wins over ZKR_AUTH
           and ZKR_AUTH_FILE; both options, or both variables, or an empty
           option, is a usage error.
    --tls-ca FILE, --tls-cert FILE, --tls-key FILE
           [ZKR_TLS_CA, ZKR_TLS_CERT, ZKR_TLS_KEY]
           connect with TLS (to the servers' secureClientPort), trusting the
           PEM CA certificates in --tls-ca (default: the system's) and
           presenting --tls-cert/--tls-key if the servers want a client
           certificate. Any of them turns TLS on.
    --id ID   [ZKR_ID]
           participant id, the data of zkr's nodes, which zkr leader and
           Curator's getParticipants show (default: HOSTNAME:PID).
    --metrics-addr HOST:PORT   [ZKR_METRICS_ADDR]
           serve the client's metrics (Prometheus text format) on
           http://HOST:PORT/metrics, and /healthz: 200 while the session
           is connected and what zkr holds is still trusted (or it is
           waiting), 503 otherwise, with one line saying why. Served until
           zkr exits. Off by default.
    -v, --verbose   [ZKR_VERBOSE=1]
           say on stderr when zkr waits, holds and releases.
    -h, --help
           show the manual.
    --version
           print zkr's version and exit (before the subcommand only).

    COMMAND gets zkr's environment without ZKR_AUTH.
`

// globals are the options every subcommand takes.
type globals struct {
	connect        string
	sessionTimeout time.Duration
	connectTimeout time.Duration
	namespace      string
	auth           argValue // USER:PASSWORD from --auth or ZKR_AUTH
	authFile       argValue // from --auth-file or ZKR_AUTH_FILE
	tlsCA          string
	tlsCert        string
	tlsKey         string
	id             string
	verbose        bool
	metricsAddr    string
	metrics        *metricsServer // serving --metrics-addr, once dialled

	envErr error     // a ZKR_ variable that does not parse
	stderr io.Writer // for the one warning about --auth
}

// argValue is --auth or --auth-file: it remembers whether it came from the
// command line, which wins over the environment (see credentials).
type argValue struct {
	value   string
	fromArg bool
}

func (s *argValue) String() string { return "" } // never printed

func (s *argValue) Set(v string) error {
	s.value, s.fromArg = v, true
	return nil
}

// credentials says where the digest credentials come from: USER:PASSWORD
// itself, or the file that holds it (at most one of them set). An option
// wins over a variable; two options, or two variables, are a conflict for
// the user to settle, not for zkr to guess.
func (g *globals) credentials() (auth, file string, err error) {
	switch {
	case g.auth.fromArg && g.authFile.fromArg:
		return "", "", errors.New("--auth and --auth-file: give one")
	case g.auth.fromArg:
		return g.auth.value, "", nil
	case g.authFile.fromArg:
		return "", g.authFile.value, nil
	case g.auth.value != "" && g.authFile.value != "":
		return "", "", errors.New("ZKR_AUTH and ZKR_AUTH_FILE are both set: unset one (or give --auth-file, which wins)")
	}
	return g.auth.value, g.authFile.value, nil
}

// defaultGlobals are the defaults, with the ZKR_ environment applied.
func defaultGlobals() *globals {
	g := &globals{
		connect:        "127.0.0.1:2181",
		sessionTimeout: conn.DefaultSessionTimeout,
		connectTimeout: 15 * time.Second,
		stderr:         io.Discard,
	}
	for _, name := range []string{"ZK_CONNECT", "ZKR_CONNECT"} { // the second wins
		if v := os.Getenv(name); v != "" {
			g.connect = v
		}
	}
	duration := func(name string, d *time.Duration) {
		if v := os.Getenv(name); v != "" {
			parsed, err := time.ParseDuration(v)
			if err != nil {
				g.envErr = errors.Join(g.envErr, fmt.Errorf("%s=%q: not a duration", name, v))
				return
			}
			*d = parsed
		}
	}
	duration("ZKR_SESSION_TIMEOUT", &g.sessionTimeout)
	duration("ZKR_CONNECT_TIMEOUT", &g.connectTimeout)
	g.namespace = os.Getenv("ZKR_NAMESPACE")
	g.auth.value = os.Getenv("ZKR_AUTH")
	g.authFile.value = os.Getenv("ZKR_AUTH_FILE")
	g.tlsCA = os.Getenv("ZKR_TLS_CA")
	g.tlsCert = os.Getenv("ZKR_TLS_CERT")
	g.tlsKey = os.Getenv("ZKR_TLS_KEY")
	g.id = os.Getenv("ZKR_ID")
	g.metricsAddr = os.Getenv("ZKR_METRICS_ADDR")
	switch v := os.Getenv("ZKR_VERBOSE"); v {
	case "", "0", "false":
	case "1", "true":
		g.verbose = true
	default:
		g.envErr = errors.Join(g.envErr, fmt.Errorf("ZKR_VERBOSE=%q: want 1 or 0", v))
	}
	return g
}

// register adds the global options to fs, with their current values as
// defaults: registering them again on a subcommand's flag set keeps what was
// given before the subcommand.
func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.connect, "connect", g.connect, "")
	fs.DurationVar(&g.sessionTimeout, "session-timeout", g.sessionTimeout, "")
	fs.DurationVar(&g.connectTimeout, "connect-timeout", g.connectTimeout, "")
	fs.StringVar(&g.namespace, "namespace", g.namespace, "")
	fs.Var(&g.auth, "auth", "")
	fs.Var(&g.authFile, "auth-file", "")
	fs.StringVar(&g.tlsCA, "tls-ca", g.tlsCA, "")
	fs.StringVar(&g.tlsCert, "tls-cert", g.tlsCert, "")
	fs.StringVar(&g.tlsKey, "tls-key", g.tlsKey, "")
	fs.StringVar(&g.id, "id", g.id, "")
	fs.StringVar(&g.metricsAddr, "metrics-addr", g.metricsAddr, "")
	fs.BoolVar(&g.verbose, "verbose", g.verbose, "")
	fs.BoolVar(&g.verbose, "v", g.verbose, "")
}

// newFlagSet returns a flag set that reports errors instead of printing
// them with a usage dump: zkr prints one line and exits 2.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// check finds what is wrong with the global options before anything is
// contacted.
func (g *globals) check() error {
	if g.envErr != nil {
		return g.envErr
	}
	if g.connect == "" {
		return errors.New("--connect: no servers")
	}
	for _, s := range strings.Split(g.connect, ",") {
		if err := checkServer(s); err != nil {
			return fmt.Errorf("--connect: %w", err)
		}
	}
	if g.sessionTimeout <= 0 {
		return fmt.Errorf("--session-timeout %v: must be positive", g.sessionTimeout)
	}
	if g.sessionTimeout > conn.MaxSessionTimeout {
		return fmt.Errorf("--session-timeout %v: above ZooKeeper's limit of %v", g.sessionTimeout, conn.MaxSessionTimeout)
	}
	if g.connectTimeout <= 0 {
		return fmt.Errorf("--connect-timeout %v: must be positive", g.connectTimeout)
	}
	if g.namespace != "" {
		ns := "/" + strings.TrimPrefix(g.namespace, "/")
		if ns == "/" || framework.ValidatePath(ns) != nil {
			return fmt.Errorf("--namespace %q: not a valid ZooKeeper path", g.namespace)
		}
	}
	if g.auth.fromArg && g.auth.value == "" {
		return errors.New("--auth '': empty; want USER:PASSWORD")
	}
	if g.authFile.fromArg && g.authFile.value == "" {
		return errors.New("--auth-file '': empty; want a file")
	}
	auth, _, err := g.credentials()
	if err != nil {
		return err
	}
	if auth != "" {
		if user, _, ok := strings.Cut(auth, ":"); !ok || user == "" {
			return errors.New("--auth (or ZKR_AUTH): want USER:PASSWORD")
		}
	}
	if (g.tlsCert == "") != (g.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	return nil
}

func checkServer(s string) error {
	host, port := s, ""
	if strings.Contains(s, ":") {
		var err error
		if host, port, err = net.SplitHostPort(s); err != nil {
			return fmt.Errorf("%q: %v", s, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: bad port", s)
		}
	}
	if host == "" {
		return fmt.Errorf("%q: no host", s)
	}
	return nil
}

// tlsConfig loads the TLS files, or returns nil without TLS options.
func (g *globals) tlsConfig() (*tls.Config, error) {
	if g.tlsCA == "" && g.tlsCert == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if g.tlsCA != "" {
		pem, err := os.ReadFile(g.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", g.tlsCA)
		}
	}
	if g.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(g.tlsCert, g.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// prepare checks the global options and loads what they name, so that a
// mistake is a usage error before anything is contacted.
func (g *globals) prepare() ([]framework.Option, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	auth, tlsCfg, err := g.access()
	if err != nil {
		return nil, err
	}
	if g.auth.fromArg {
		fmt.Fprintln(g.stderr, "zkr: warning: --auth shows the password to every local user (ps); use --auth-file or ZKR_AUTH")
	}
	connOpts := []framework.Option{framework.WithSessionTimeout(g.sessionTimeout)}
	if auth != "" {
		user, password, _ := strings.Cut(auth, ":")
		connOpts = append(connOpts, framework.WithDigestAuth(user, password))
	}
	if tlsCfg != nil {
		connOpts = append(connOpts, framework.WithTLS(tlsCfg))
	}
	return append(connOpts,
		framework.WithNamespace(g.namespace),
		// Closing the session deletes zkr's ephemeral nodes anyway: a
		// release that cannot reach the server must not hold zkr up.
		framework.WithDrainTimeout(time.Second),
	), nil
}

// access is the digest credentials (USER:PASSWORD, or empty) and the TLS
// configuration (or nil) the flags ask for.
func (g *globals) access() (auth string, tlsCfg *tls.Config, err error) {
	if tlsCfg, err = g.tlsConfig(); err != nil {
		return "", nil, err
	}
	auth, file, err := g.credentials()
	if err != nil {
		return "", nil, err
	}
	if file != "" {
		if auth, err = readAuthFile(file); err != nil {
			return "", nil, err
		}
	}
	return auth, tlsCfg, nil
}

// readAuthFile reads USER:PASSWORD from the first line of path.
func readAuthFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--auth-file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSpace(line)
	if user, _, ok := strings.Cut(line, ":"); !ok || user == "" {
		return "", fmt.Errorf("--auth-file %s: want USER:PASSWORD on its first line", path)
	}
	return line, nil
}

// dial connects with opts from prepare, giving up after --connect-timeout
// or when ctx ends.
func (g *globals) dial(ctx context.Context, opts []framework.Option) (*framework.Client, error) {
	if g.metricsAddr != "" && g.metrics == nil {
		m, err := startMetrics(g.metricsAddr)
		if err != nil {
			return nil, err
		}
		g.metrics = m
		opts = append(slices.Clip(opts), m.option())
	}
	ctx, cancel := context.WithTimeout(ctx, g.connectTimeout)
	defer cancel()
	c, err := framework.Dial(ctx, strings.Split(g.connect, ","), opts...)
	if g.metrics != nil {
		if err != nil {
			g.metrics.close()
			g.metrics = nil
		} else {
			g.metrics.follow(c) // it stops with c's Close
		}
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("no session with %s after %v", g.connect, g.connectTimeout)
		}
		return nil, fmt.Errorf("connect to %s: %w", g.connect, err)
	}
	return c, nil
}

// closeClient closes c, waiting at most a few seconds: zkr is about to exit,
// which closes the socket anyway, and after a lost link go-zookeeper can hold
// Close for up to ten times 2/3 of the session timeout (its handshake's read
// deadline on a reconnect). The server removes zkr's ephemeral nodes when the
// session closes or expires either way.
func closeClient(c *framework.Client) {
	wait := 3 * time.Second
	switch c.State() {
	case conn.StateConnected, conn.StateReconnected, conn.StateReadOnly:
	default:
		wait = 0 // nothing can reach the server now
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Close()
	}()
	select {
	case <-done:
	case <-time.After(wait):
	}
}

// participantID is --id, or HOSTNAME:PID: unlike Curator's default (the
// host's address), it tells apart several zkr on one machine.
func (g *globals) participantID() string {
	if g.id != "" {
		return g.id
	}
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

// checkPath refuses what is not a usable lock path. The root is refused too:
// a lock's nodes would clutter it.
func checkPath(path string) error {
	if err := framework.ValidatePath(path); err != nil {
		return fmt.Errorf("PATH %q: not a valid ZooKeeper path (absolute, no trailing or double slash, no . or ..)", path)
	}
	if path == "/" {
		return errors.New("PATH /: pick a path below the root")
	}
	return nil
}

// parseCommandLine parses OPTIONS PATH [OPTIONS] [--] [COMMAND [ARGS...]]
// into fs and returns PATH and COMMAND's argv (empty without COMMAND).
func parseCommandLine(fs *flag.FlagSet, args []string) (path string, argv []string, err error) {
	if err := fs.Parse(args); err != nil {
		return "", nil, err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return "", nil, errors.New("missing PATH")
	}
	path = rest[0]
	if err := fs.Parse(rest[1:]); err != nil {
		return "", nil, err
	}
	return path, fs.Args(), checkPath(path)
}

// commandError tells apart a COMMAND that is not there (127) from one that
// cannot be run (126), as shells do.
func commandError(err error) int {
	var ee *exec.Error
	if errors.As(err, &ee) && (errors.Is(ee.Err, exec.ErrNotFound) || errors.Is(ee.Err, os.ErrNotExist)) {
		return exitNotFound
	}
	if errors.Is(err, os.ErrNotExist) {
		return exitNotFound
	}
	return exitNoExec
}

// parseArgs parses a subcommand's options (global ones included) and turns
// --help into the manual and a bad option into a usage error. ok is false
// when zkr should exit with code.
func (a *app) parseArgs(name, help string, parse func() error) (code int, ok bool) {
	if err := parse(); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(a.stdout, help)
			return 0, false
		}
		return a.usage("zkr "+name, "%v", err), false
	}
	return 0, true
}
