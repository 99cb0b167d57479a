package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
)

const globalOptionsHelp = `    Global options go before the subcommand or after it (before PATH).
    Each has an environment variable (in brackets); an option given on the
    command line wins over it. A bad value is reported under the name it
    came from: the option, or the variable.

    --connect HOST:PORT[,HOST:PORT...][/CHROOT]   [ZKR_CONNECT, else ZK_CONNECT]
           ZooKeeper servers (default 127.0.0.1:2181). A /CHROOT after the
           last server is the namespace, as ZooKeeper's own clients take
           it (see --namespace).
    --session-timeout D   [ZKR_SESSION_TIMEOUT]
           session timeout asked of the server (default 10s). A holder cut
           off from ZooKeeper stops COMMAND after 2/3 of it; a dead zkr's
           lock passes on after all of it. Must be at least 900ms, to
           leave time to stop COMMAND in between.
    --dial-timeout D   [ZKR_DIAL_TIMEOUT]
           how long to wait at start for a session with ZooKeeper, all
           attempts together (default 15s; the library's
           framework.WithDialTimeout, whose name it takes); then zkr
           exits 125, saying why the last attempt failed (connection
           refused, a name that does not resolve, a TLS handshake). Each
           attempt to reach one server gives up after 1s (the library's
           framework.WithConnectTimeout).
    --namespace NS   [ZKR_NAMESPACE]
           prefix every path with /NS, as Curator's namespace; the same
           as a /NS chroot in --connect (giving both, they must agree).
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
           option, is a usage error. zkr warns when the auth file is
           readable by its group or by others (chmod 600 it).
    --acl open|creator   [ZKR_ACL]
           the ACL of the nodes zkr creates. open (the default, as
           Curator's): anyone may read, change or delete them. creator:
           only a client with the same credentials may (ZooKeeper's
           CREATOR_ALL_ACL), so another client cannot delete a lock node
           and take the lock, nor queue under the path. Needs credentials
           (--auth-file, ZKR_AUTH or --auth).
    --tls-ca FILE, --tls-cert FILE, --tls-key FILE
           [ZKR_TLS_CA, ZKR_TLS_CERT, ZKR_TLS_KEY]
           connect with TLS (to the servers' secureClientPort), trusting the
           PEM CA certificates in --tls-ca (default: the system's) and
           presenting --tls-cert/--tls-key if the servers want a client
           certificate. Any of them turns TLS on.
    --id ID   [ZKR_ID]
           participant id, the data of zkr's nodes, which zkr leader and
           Curator's getParticipants show (default: HOSTNAME:PID). Printable
           text: a newline or other control character, or an empty --id,
           is a usage error.
    --metrics-addr HOST:PORT   [ZKR_METRICS_ADDR]
           serve the client's metrics (Prometheus text format) on
           http://HOST:PORT/metrics, and /healthz: 200 while the session
           is connected and what zkr holds is still trusted (or it is
           waiting), 503 otherwise, with one line saying why. Served until
           zkr exits. Off by default. An address that is not HOST:PORT
           is a usage error; one zkr cannot listen on fails zkr (125).
    -v, --verbose   [ZKR_VERBOSE=1]
           say on stderr when zkr waits, holds and releases.
    --log-level LEVEL   [ZKR_LOG_LEVEL]
           show the library's own log on stderr (sessions, links, retries),
           from LEVEL up: debug, info, warn or error. Default: none of it.
    --log-format FORMAT   [ZKR_LOG_FORMAT]
           that log as text (key=value) or json, one object a line; given
           alone, it shows warn and error.
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
	dialTimeout    time.Duration
	namespace      string
	auth           argValue // USER:PASSWORD from --auth or ZKR_AUTH
	authFile       argValue // from --auth-file or ZKR_AUTH_FILE
	acl            string   // "open" or "creator"
	tlsCA          string
	tlsCert        string
	tlsKey         string
	id             string
	verbose        bool
	metricsAddr    string
	metrics        *metricsServer // serving --metrics-addr, once dialled
	logLevel       string         // --log-level: "" is the library's silence
	logFormat      string         // --log-format: text or json

	// env is, for each option whose value came from the environment, the
	// variable it came from (and why it does not parse, if so): a message
	// about the value blames the variable, until the command line gives
	// the option, which then wins.
	env    map[string]envValue
	given  map[string]bool // the options the command line gave
	stderr io.Writer       // for the one warning about --auth
}

// envValue is a variable that set an option.
type envValue struct {
	name, value string
	err         error // the value does not parse; the option kept its default
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
		dialTimeout:    15 * time.Second,
		env:            map[string]envValue{},
		given:          map[string]bool{},
		stderr:         io.Discard,
	}
	// lookup is the variable name's value, if set, remembered as the
	// source of option's.
	lookup := func(option, name string) (string, bool) {
		v := os.Getenv(name)
		if v != "" {
			g.env[option] = envValue{name: name, value: v}
		}
		return v, v != ""
	}
	str := func(option, name string, p *string) {
		if v, ok := lookup(option, name); ok {
			*p = v
		}
	}
	str("connect", "ZK_CONNECT", &g.connect)
	str("connect", "ZKR_CONNECT", &g.connect) // wins over ZK_CONNECT
	duration := func(option, name string, d *time.Duration) {
		if v, ok := lookup(option, name); ok {
			parsed, err := time.ParseDuration(v)
			if err != nil {
				g.env[option] = envValue{name: name, value: v, err: fmt.Errorf("%s=%q: not a duration", name, v)}
				return
			}
			*d = parsed
		}
	}
	duration("session-timeout", "ZKR_SESSION_TIMEOUT", &g.sessionTimeout)
	duration("dial-timeout", "ZKR_DIAL_TIMEOUT", &g.dialTimeout)
	str("namespace", "ZKR_NAMESPACE", &g.namespace)
	str("auth", "ZKR_AUTH", &g.auth.value)
	str("auth-file", "ZKR_AUTH_FILE", &g.authFile.value)
	g.acl = "open"
	str("acl", "ZKR_ACL", &g.acl)
	str("tls-ca", "ZKR_TLS_CA", &g.tlsCA)
	str("tls-cert", "ZKR_TLS_CERT", &g.tlsCert)
	str("tls-key", "ZKR_TLS_KEY", &g.tlsKey)
	str("id", "ZKR_ID", &g.id)
	str("metrics-addr", "ZKR_METRICS_ADDR", &g.metricsAddr)
	str("log-level", "ZKR_LOG_LEVEL", &g.logLevel)
	str("log-format", "ZKR_LOG_FORMAT", &g.logFormat)
	if v, ok := lookup("verbose", "ZKR_VERBOSE"); ok {
		switch v {
		case "0", "false":
		case "1", "true":
			g.verbose = true
		default:
			g.env["verbose"] = envValue{name: "ZKR_VERBOSE", value: v, err: fmt.Errorf("ZKR_VERBOSE=%q: want 1 or 0", v)}
		}
	}
	return g
}

// name is how a message names option: the variable its value came from,
// or the option.
func (g *globals) name(option string) string {
	if e, ok := g.env[option]; ok {
		return e.name
	}
	return "--" + option
}

// blame is how a message names option's value: VARIABLE="value" as set,
// or --option value (value as the option was given, formatted).
func (g *globals) blame(option, value string) string {
	if e, ok := g.env[option]; ok {
		return fmt.Sprintf("%s=%q", e.name, e.value)
	}
	return "--" + option + " " + value
}

// givenValue is a global option's flag.Value that notes when the command
// line gives the option: its variable then no longer speaks for it.
type givenValue struct {
	flag.Value
	g      *globals
	option string
	isBool bool
}

func (v givenValue) Set(s string) error {
	delete(v.g.env, v.option)
	v.g.given[v.option] = true
	return v.Value.Set(s)
}

// IsBoolFlag keeps -v a switch, as flag.BoolVar made it.
func (v givenValue) IsBoolFlag() bool { return v.isBool }

// register adds the global options to fs, with their current values as
// defaults: registering them again on a subcommand's flag set keeps what was
// given before the subcommand.
func (g *globals) register(fs *flag.FlagSet) {
	before := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { before[f.Name] = true })
	fs.StringVar(&g.connect, "connect", g.connect, "")
	fs.DurationVar(&g.sessionTimeout, "session-timeout", g.sessionTimeout, "")
	fs.DurationVar(&g.dialTimeout, "dial-timeout", g.dialTimeout, "")
	fs.StringVar(&g.namespace, "namespace", g.namespace, "")
	fs.Var(&g.auth, "auth", "")
	fs.Var(&g.authFile, "auth-file", "")
	fs.StringVar(&g.acl, "acl", g.acl, "")
	fs.StringVar(&g.tlsCA, "tls-ca", g.tlsCA, "")
	fs.StringVar(&g.tlsCert, "tls-cert", g.tlsCert, "")
	fs.StringVar(&g.tlsKey, "tls-key", g.tlsKey, "")
	fs.StringVar(&g.id, "id", g.id, "")
	fs.StringVar(&g.metricsAddr, "metrics-addr", g.metricsAddr, "")
	fs.StringVar(&g.logLevel, "log-level", g.logLevel, "")
	fs.StringVar(&g.logFormat, "log-format", g.logFormat, "")
	fs.BoolVar(&g.verbose, "verbose", g.verbose, "")
	fs.BoolVar(&g.verbose, "v", g.verbose, "")
	fs.VisitAll(func(f *flag.Flag) {
		if before[f.Name] {
			return // the subcommand's own
		}
		option := f.Name
		if option == "v" {
			option = "verbose"
		}
		// The flag package's own test for a switch (-v, not -v=true).
		b, isBool := f.Value.(interface{ IsBoolFlag() bool })
		f.Value = givenValue{Value: f.Value, g: g, option: option, isBool: isBool && b.IsBoolFlag()}
	})
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
	for _, option := range slices.Sorted(maps.Keys(g.env)) {
		if err := g.env[option].err; err != nil {
			return err
		}
	}
	if g.connect == "" {
		return fmt.Errorf("%s: no servers", g.name("connect"))
	}
	servers, chroot, err := splitChroot(g.connect)
	if err != nil {
		return fmt.Errorf("--connect: %w", err)
	}
	for _, s := range servers {
		if err := checkServer(s); err != nil {
			return fmt.Errorf("%s: %w", g.name("connect"), err)
		}
	}
	if g.sessionTimeout <= 0 {
		return fmt.Errorf("%s: must be positive", g.blame("session-timeout", g.sessionTimeout.String()))
	}
	if g.sessionTimeout > conn.MaxSessionTimeout {
		return fmt.Errorf("%s: above ZooKeeper's limit of %v", g.blame("session-timeout", g.sessionTimeout.String()), conn.MaxSessionTimeout)
	}
	if g.dialTimeout <= 0 {
		return fmt.Errorf("%s: must be positive", g.blame("dial-timeout", g.dialTimeout.String()))
	}
	if g.namespace != "" {
		ns := "/" + strings.TrimPrefix(g.namespace, "/")
		if ns == "/" || framework.ValidatePath(ns) != nil {
			return fmt.Errorf("%s: not a valid ZooKeeper path", g.blame("namespace", strconv.Quote(g.namespace)))
		}
		if chroot != "" && chroot != ns {
			return fmt.Errorf("--connect names the chroot %s and --namespace another (%s): give one", chroot, ns)
		}
	}
	if err := g.checkID(); err != nil {
		return err
	}
	if err := g.checkMetricsAddr(); err != nil {
		return err
	}
	if _, ok := logLevels[g.logLevel]; !ok && g.logLevel != "" {
		return fmt.Errorf("%s: want debug, info, warn or error", g.blame("log-level", g.logLevel))
	}
	if g.logFormat != "" && g.logFormat != "text" && g.logFormat != "json" {
		return fmt.Errorf("%s: want text or json", g.blame("log-format", g.logFormat))
	}
	if g.auth.fromArg && g.auth.value == "" {
		return errors.New("--auth '': empty; want USER:PASSWORD")
	}
	if g.authFile.fromArg && g.authFile.value == "" {
		return errors.New("--auth-file '': empty; want a file")
	}
	auth, file, err := g.credentials()
	if err != nil {
		return err
	}
	if auth != "" {
		if user, _, ok := strings.Cut(auth, ":"); !ok || user == "" {
			return fmt.Errorf("%s: want USER:PASSWORD", g.name("auth"))
		}
	}
	switch g.acl {
	case "open":
	case "creator":
		if auth == "" && file == "" {
			return errors.New("--acl creator: no credentials to give the nodes to; give --auth-file (or ZKR_AUTH)")
		}
	default:
		return fmt.Errorf("%s: want open or creator", g.blame("acl", g.acl))
	}
	switch {
	case g.tlsCert != "" && g.tlsKey == "":
		return fmt.Errorf("%s without a key: give --tls-key (or ZKR_TLS_KEY) too", g.name("tls-cert"))
	case g.tlsKey != "" && g.tlsCert == "":
		return fmt.Errorf("%s without a certificate: give --tls-cert (or ZKR_TLS_CERT) too", g.name("tls-key"))
	}
	return nil
}

// checkID refuses an empty --id, and an id that zkr leader and zkr ls
// could not print on one line (a newline in it printed a fake waiter).
func (g *globals) checkID() error {
	switch {
	case g.given["id"] && g.id == "":
		return errors.New("--id '': empty; want a participant id (or no --id, for HOSTNAME:PID)")
	case !utf8.ValidString(g.id) || strings.ContainsFunc(g.id, unicode.IsControl):
		return fmt.Errorf("%s: a control character (a newline, say) in a participant id would garble zkr leader's and zkr ls's lines; want printable text", g.blame("id", strconv.Quote(g.id)))
	}
	return nil
}

// checkMetricsAddr refuses an address zkr could never listen on: a
// usage error, found before anything is contacted. One that is taken, or
// whose host does not resolve, is found when zkr listens (125).
func (g *globals) checkMetricsAddr() error {
	if g.metricsAddr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(g.metricsAddr)
	if err == nil {
		_, err = net.LookupPort("tcp", port)
	}
	if err != nil {
		return fmt.Errorf("%s: %v; want HOST:PORT (PORT 0: any free one)", g.blame("metrics-addr", g.metricsAddr), err)
	}
	return nil
}

// sessionTooShort is the refusal of a session timeout, set as setting
// says, by checkHolding and graceFlag.check.
func sessionTooShort(setting string) error {
	return fmt.Errorf("%s: too short to stop COMMAND in time (between 2/3 of it, when the hold is in doubt, and all of it, when the server may grant the hold elsewhere, less a margin of at least %v, zkr needs at least %v); give at least %v",
		setting, minMargin, minBudget, minSessionTimeout)
}

// logLevels are --log-level's values.
var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug,
	"info":  slog.LevelInfo,
	"warn":  slog.LevelWarn,
	"error": slog.LevelError,
}

// libraryLogger is the logger --log-level and --log-format ask for, on
// stderr, or nil: without either the library stays silent, as zkr's
// output was before them. A format alone shows warnings and errors.
func (g *globals) libraryLogger() *slog.Logger {
	if g.logLevel == "" && g.logFormat == "" {
		return nil
	}
	level, ok := logLevels[g.logLevel]
	if !ok {
		level = slog.LevelWarn
	}
	opts := &slog.HandlerOptions{Level: level}
	if g.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(g.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(g.stderr, opts))
}

// checkHolding refuses a session timeout that leaves no time to stop
// COMMAND between the moment its hold is in doubt and the moment the
// server may grant the hold elsewhere. The subcommands that run COMMAND
// call it before their own checks, which would blame --session-timeout
// for a value from ZKR_SESSION_TIMEOUT.
func (g *globals) checkHolding() error {
	if g.sessionTimeout > 0 && graceBudget(g.sessionTimeout) < minBudget {
		return sessionTooShort(g.blame("session-timeout", g.sessionTimeout.String()))
	}
	return nil
}

// splitChroot splits a connect string into its servers and ZooKeeper's
// chroot, which may end it ("zk1:2181,zk2:2181/app" is /app), as every
// ZooKeeper client reads it. The framework takes the chroot as the
// namespace; zkr checks it here, so that a mistake is a usage error.
func splitChroot(connect string) (servers []string, chroot string, err error) {
	servers = strings.Split(connect, ",")
	for i, s := range servers {
		host, root, found := strings.Cut(s, "/")
		if !found {
			continue
		}
		if i != len(servers)-1 {
			return nil, "", fmt.Errorf("%q: a chroot goes after the last server only, as in zk1:2181,zk2:2181/app", s)
		}
		servers[i] = host
		if root == "" {
			break // "zk:2181/" is the root: no chroot
		}
		chroot = "/" + root
		if framework.ValidatePath(chroot) != nil {
			return nil, "", fmt.Errorf("chroot %q: not a valid ZooKeeper path", chroot)
		}
	}
	return servers, chroot, nil
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
			return nil, fmt.Errorf("%s: %w", g.name("tls-ca"), err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate in it", g.blame("tls-ca", g.tlsCA))
		}
	}
	if g.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(g.tlsCert, g.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", g.name("tls-cert"), g.name("tls-key"), err)
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
	connOpts := []framework.Option{
		framework.WithSessionTimeout(g.sessionTimeout),
		framework.WithDialTimeout(g.dialTimeout),
	}
	if auth != "" {
		user, password, _ := strings.Cut(auth, ":")
		connOpts = append(connOpts, framework.WithDigestAuth(user, password))
	}
	if tlsCfg != nil {
		connOpts = append(connOpts, framework.WithTLS(tlsCfg))
	}
	if g.acl == "creator" {
		connOpts = append(connOpts, framework.WithACLProvider(framework.CreatorACL()))
	}
	if g.namespace != "" {
		// Not otherwise: an empty one would override a chroot in --connect.
		connOpts = append(connOpts, framework.WithNamespace(g.namespace))
	}
	if l := g.libraryLogger(); l != nil {
		connOpts = append(connOpts, framework.WithLogger(l))
	}
	return append(connOpts,
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
		if auth, err = readAuthFile(file, g.stderr); err != nil {
			return "", nil, fmt.Errorf("%s: %w", g.name("auth-file"), err)
		}
	}
	return auth, tlsCfg, nil
}

// readAuthFile reads USER:PASSWORD from the first line of path, and warns
// on warn if the file's group or others may read it, as ssh does of a
// private key: a password every local user can read protects nothing.
func readAuthFile(path string, warn io.Writer) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o044 != 0 {
		fmt.Fprintf(warn, "zkr: warning: --auth-file %s: permissions %#o let other users read the password; chmod 600 it\n", path, fi.Mode().Perm())
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSpace(line)
	if user, _, ok := strings.Cut(line, ":"); !ok || user == "" {
		return "", fmt.Errorf("%s: want USER:PASSWORD on its first line", path)
	}
	return line, nil
}

// dial connects with opts from prepare, giving up after --dial-timeout
// (the framework's dial timeout) or when ctx ends.
func (g *globals) dial(ctx context.Context, opts []framework.Option) (*framework.Client, error) {
	if g.metricsAddr != "" && g.metrics == nil {
		m, err := startMetrics(g.metricsAddr)
		if err != nil {
			return nil, err
		}
		g.metrics = m
		opts = append(slices.Clip(opts), m.option())
	}
	start := time.Now()
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
		return nil, connectError(g.connect, time.Since(start), err)
	}
	return c, nil
}

// connectError is Dial's err as zkr says it: no session with which servers,
// after how long, and why the last attempt to reach one failed (refused,
// a name that does not resolve, a TLS handshake), which Dial's error
// carries: what the user has to fix.
func connectError(connect string, took time.Duration, err error) error {
	msg := "no session with " + connect
	if errors.Is(err, context.DeadlineExceeded) {
		msg += " after " + took.Round(100*time.Millisecond).String()
	}
	if cause := dialCause(err); cause != nil {
		return fmt.Errorf("%s: %w", msg, cause)
	}
	// A cause of another kind, or none (connections were made, but no
	// session came of them): the library's own words, whole.
	return fmt.Errorf("connect to %s: %w", connect, err)
}

// dialCause finds in Dial's err why the last attempt to reach a server
// failed, or returns nil.
func dialCause(err error) error {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns
	}
	var cert *tls.CertificateVerificationError
	if errors.As(err, &cert) {
		return cert
	}
	var record tls.RecordHeaderError
	if errors.As(err, &record) {
		return record
	}
	var op *net.OpError // refused, unreachable, timed out, a TLS alert
	if errors.As(err, &op) {
		return op
	}
	return nil
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

// ownTree is the server's own tree: its quotas (/zookeeper/quota) and its
// dynamic configuration (/zookeeper/config).
const ownTree = "/zookeeper"

// checkOwnTree refuses PATH of a subcommand that makes nodes when the
// server would see it in /zookeeper, the namespace or a chroot included:
// no recipe's nodes belong among the server's own. The subcommands that
// only look may look there. It takes the namespace and the chroot as
// check vetted them.
func (g *globals) checkOwnTree(path string) error {
	root, under := "", ""
	if g.namespace != "" {
		root = "/" + strings.TrimPrefix(g.namespace, "/")
		under = g.blame("namespace", g.namespace)
	} else if _, chroot, err := splitChroot(g.connect); err == nil && chroot != "" {
		root, under = chroot, "the chroot "+chroot+" of "+g.name("connect")
	}
	full := root + path
	if full != ownTree && !strings.HasPrefix(full, ownTree+"/") {
		return nil
	}
	where := "PATH " + path
	if root != "" {
		where = fmt.Sprintf("PATH %s under %s is %s", path, under, full)
	}
	return fmt.Errorf("%s: %s is ZooKeeper's own tree (its quotas and configuration), no place for zkr's nodes; pick a path outside it", where, ownTree)
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
