package conn

import (
	"crypto/tls"
	"io"
	"log/slog"
	"time"
)

// DefaultSessionTimeout is the session timeout asked of the server when none
// is given. The server clamps it into its own [min, max] bounds.
const DefaultSessionTimeout = 10 * time.Second

// Option configures Dial.
type Option func(*config)

type config struct {
	sessionTimeout time.Duration
	connectTimeout time.Duration
	auth           []authEntry
	tls            *tls.Config
	log            *slog.Logger
	expiryPercent  int
	readOnly       bool
}

type authEntry struct {
	scheme string
	cred   []byte
}

func defaultConfig() config {
	return config{
		sessionTimeout: DefaultSessionTimeout,
		connectTimeout: time.Second,
		log:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		expiryPercent:  100,
	}
}

// WithSessionTimeout sets the session timeout asked of the server (default
// DefaultSessionTimeout). The server may negotiate it into its own bounds;
// Session().Timeout is the negotiated value.
func WithSessionTimeout(d time.Duration) Option { return func(c *config) { c.sessionTimeout = d } }

// WithConnectTimeout bounds each attempt to open a TCP (and TLS) connection
// to one server (default 1s). Waiting for the first session as a whole is
// bounded by Dial's context.
func WithConnectTimeout(d time.Duration) Option { return func(c *config) { c.connectTimeout = d } }

// WithDigestAuth adds "digest" credentials user:password. They are sent
// before any request on every connection, including reconnects.
func WithDigestAuth(user, password string) Option {
	return func(c *config) {
		c.auth = append(c.auth, authEntry{scheme: "digest", cred: []byte(user + ":" + password)})
	}
}

// WithTLS connects with TLS using cfg, to servers' secureClientPort. When
// cfg.ServerName is empty, each server's certificate is verified against
// the host named in the server list as given (a DNS name stays a name: it
// is not resolved to an IP first). Set cfg.ServerName to expect one name
// whatever address is dialled, for example behind a proxy or a load
// balancer.
func WithTLS(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

// WithLogger sends the client's own log and go-zookeeper's to l (default:
// silent).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithSimulatedExpiry sets after what share of the negotiated session timeout
// (in percent, 0..100, default 100) a Suspended connection is reported Lost
// even though the server has not said so, as Curator's
// simulatedSessionExpirationPercent. 0 turns simulated expiry off: Lost then
// comes only from the server, which a partitioned client may not hear for a
// long time.
func WithSimulatedExpiry(percent int) Option { return func(c *config) { c.expiryPercent = percent } }

// WithReadOnly allows sessions with servers in read-only mode (ZooKeeper's
// readonlymode.enabled), reported as StateReadOnly, as Curator's canBeReadOnly.
// Off by default: such a server refuses the client instead.
//
// A read-only server only creates new sessions when the ensemble runs with
// localSessionsEnabled=true (ZooKeeper 3.8 refuses to create a global session
// without a quorum), and never takes over a session from a read-write server,
// so in practice a ReadOnly state is seen by clients that start during a
// partition. go-zookeeper does not look for a read-write server while on a
// read-only one, as the Java client does; it moves when the link drops.
func WithReadOnly() Option { return func(c *config) { c.readOnly = true } }
