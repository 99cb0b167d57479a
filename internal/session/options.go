package session

import (
	"crypto/tls"
	"io"
	"log/slog"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
)

// Config is what Dial needs to know; package framework fills it from its
// options, which document each field.
type Config struct {
	SessionTimeout time.Duration
	ConnectTimeout time.Duration // each TCP (and TLS) connection attempt
	DialTimeout    time.Duration // Dial's wait for the first session
	Auth           []Auth
	TLS            *tls.Config
	Log            *slog.Logger
	ExpiryPercent  int
	ReadOnly       bool
	// OnWatch, if set, is given every watch event (every event but the
	// session's) on go-zookeeper's receive loop: it must never block.
	OnWatch func(zk.Event)
}

// Auth is one set of credentials, sent before any request on every
// connection.
type Auth struct {
	Scheme string
	Cred   []byte
}

// DefaultConfig is the configuration of a Dial given no options.
func DefaultConfig() Config {
	return Config{
		SessionTimeout: conn.DefaultSessionTimeout,
		ConnectTimeout: time.Second,
		DialTimeout:    15 * time.Second,
		Log:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		ExpiryPercent:  100,
	}
}
