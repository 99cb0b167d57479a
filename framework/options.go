package framework

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/session"
	"github.com/zkrecipes/zkrecipes/retry"
)

// Option configures Dial.
//
// Every option of this module has one shape: an interface with an
// unexported method, so that an option given to a call it does not apply to
// does not compile. An option that applies to several calls returns a type
// that implements each of their option interfaces (the pattern of
// OpenTelemetry's Go API).
type Option interface{ applyClient(*options) }

type clientOption func(*options)

func (f clientOption) applyClient(o *options) { f(o) }

type options struct {
	namespace   string
	acl         ACLProvider
	retry       retry.Policy
	errPolicy   ErrorPolicy
	log         *slog.Logger
	drain       time.Duration
	deleteRetry time.Duration
	meters      metric.MeterProvider
	pathAttr    bool
	release     time.Duration
	maxRequest  int
	session     session.Config
}

// WithNamespace prefixes every path with ns ("app" or "/app/sub"), as
// Curator's namespace. The namespace node is created when first needed.
func WithNamespace(ns string) Option { return clientOption(func(o *options) { o.namespace = ns }) }

// WithACLProvider sets who may do what to the nodes the client creates
// (default OpenACL).
func WithACLProvider(p ACLProvider) Option { return clientOption(func(o *options) { o.acl = p }) }

// WithRetryPolicy sets how requests are retried on connection trouble
// (default retry.Default()).
func WithRetryPolicy(p retry.Policy) Option { return clientOption(func(o *options) { o.retry = p }) }

// WithErrorPolicy sets when recipes stop trusting their holds (default
// StandardPolicy).
func WithErrorPolicy(p ErrorPolicy) Option {
	return clientOption(func(o *options) { o.errPolicy = p })
}

// WithLogger logs through l, the client's own lines, its recipes' and
// go-zookeeper's (default: silent).
func WithLogger(l *slog.Logger) Option { return clientOption(func(o *options) { o.log = l }) }

// WithMeterProvider makes the client's metrics, and its recipes', with mp
// (default: otel.GetMeterProvider(), the global provider, which records
// nothing until the application installs one). The library never picks an
// exporter; docs/production.md lists the instruments.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return clientOption(func(o *options) { o.meters = mp })
}

// WithMetricPathAttribute adds the recipe's path (its lock directory, latch
// or semaphore path) as the attribute "path" to the recipes' instruments
// (default: without). Each path is a time series of its own: leave it out
// where paths are many, a lock per entity for instance.
func WithMetricPathAttribute() Option { return clientOption(func(o *options) { o.pathAttr = true }) }

// WithDrainTimeout sets how long Close waits for background deletes to
// finish before abandoning them (default 5s; 0 abandons at once).
func WithDrainTimeout(d time.Duration) Option { return clientOption(func(o *options) { o.drain = d }) }

// WithReleaseTimeout bounds how long a release waits for its delete to be
// on its way to the server (Hold.Release, a recipe's Release and Close,
// a Delete with OwnedBy and InBackground; default 5s). A release only waits for its request to be
// written, which is immediate while the link is up; past the bound the
// delete goes on in the background all the same (Drain waits for it).
func WithReleaseTimeout(d time.Duration) Option {
	return clientOption(func(o *options) { o.release = d })
}

// WithSessionTimeout sets the session timeout asked of the server (default
// conn.DefaultSessionTimeout). The server may negotiate it into its own
// bounds; Session().Timeout is the negotiated value.
func WithSessionTimeout(d time.Duration) Option {
	return clientOption(func(o *options) { o.session.SessionTimeout = d })
}

// WithDialTimeout bounds how long Dial waits for the first session
// (default 15 s, as Curator's connection timeout); Dial's context may end
// it sooner. It must be positive.
func WithDialTimeout(d time.Duration) Option {
	return clientOption(func(o *options) { o.session.DialTimeout = d })
}

// WithConnectTimeout bounds each attempt to open a TCP (and TLS) connection
// to one server (default 1s). Waiting for the first session as a whole is
// bounded by WithDialTimeout and Dial's context.
func WithConnectTimeout(d time.Duration) Option {
	return clientOption(func(o *options) { o.session.ConnectTimeout = d })
}

// WithDigestAuth adds "digest" credentials user:password. They are sent
// before any request on every connection, including reconnects.
func WithDigestAuth(user, password string) Option {
	return clientOption(func(o *options) {
		o.session.Auth = append(o.session.Auth, session.Auth{Scheme: "digest", Cred: []byte(user + ":" + password)})
	})
}

// WithTLS connects with TLS using cfg, to servers' secureClientPort. When
// cfg.ServerName is empty, each server's certificate is verified against
// the host named in the server list as given (a DNS name stays a name: it
// is not resolved to an IP first). Set cfg.ServerName to expect one name
// whatever address is dialled, for example behind a proxy or a load
// balancer.
func WithTLS(cfg *tls.Config) Option { return clientOption(func(o *options) { o.session.TLS = cfg }) }

// WithSimulatedExpiry sets after what share of the negotiated session
// timeout (in percent, 0..100, default 100) a Suspended connection is
// reported Lost even though the server has not said so, as Curator's
// simulatedSessionExpirationPercent. 0 turns simulated expiry off: Lost
// then comes only from the server, which a partitioned client may not hear
// for a long time. A session declared lost is never resumed, even if the
// server still has it when the link comes back: the client asks for a new
// one and leaves the old one to expire on the server, with its ephemeral
// nodes (as Curator's injected expiry does).
func WithSimulatedExpiry(percent int) Option {
	return clientOption(func(o *options) { o.session.ExpiryPercent = percent })
}

// WithReadOnly allows sessions with servers in read-only mode (ZooKeeper's
// readonlymode.enabled), reported as conn.StateReadOnly, as Curator's
// canBeReadOnly. Off by default: such a server refuses the client instead.
//
// A read-only server only creates new sessions when the ensemble runs with
// localSessionsEnabled=true (ZooKeeper 3.8 refuses to create a global
// session without a quorum), and never takes over a session from a
// read-write server, so in practice a ReadOnly state is seen by clients
// that start during a partition. go-zookeeper does not look for a
// read-write server while on a read-only one, as the Java client does; it
// moves when the link drops.
func WithReadOnly() Option { return clientOption(func(o *options) { o.session.ReadOnly = true }) }

func buildOptions(opts []Option) (options, error) {
	o := options{
		acl:         OpenACL(),
		retry:       retry.Default(),
		log:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		drain:       5 * time.Second,
		release:     5 * time.Second,
		maxRequest:  DefaultMaxRequestSize,
		deleteRetry: time.Second,
		meters:      otel.GetMeterProvider(),
		session:     session.DefaultConfig(),
	}
	for _, opt := range opts {
		if opt != nil {
			opt.applyClient(&o)
		}
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("framework: dial: %w: "+format, append([]any{zkrecipes.ErrInvalidArgument}, args...)...)
	}
	switch {
	case o.acl == nil:
		return o, bad("nil ACL provider")
	case o.log == nil:
		return o, bad("nil logger")
	case o.meters == nil:
		return o, bad("nil meter provider")
	case o.errPolicy != StandardPolicy && o.errPolicy != SessionOnlyPolicy:
		return o, bad("error policy %d", o.errPolicy)
	case o.drain < 0:
		return o, bad("drain timeout %v", o.drain)
	case o.release <= 0:
		return o, bad("release timeout %v", o.release)
	case o.maxRequest < 1 || o.maxRequest > maxSendable:
		return o, bad("max request size %d: must be between 1 and %d (go-zookeeper's send buffer)", o.maxRequest, maxSendable)
	}
	if o.namespace != "" {
		ns := "/" + strings.TrimPrefix(o.namespace, "/")
		if err := ValidatePath(ns); err != nil || ns == "/" {
			return o, bad("namespace %q", o.namespace)
		}
		o.namespace = ns
	}
	return o, nil
}
