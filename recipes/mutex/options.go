package mutex

import (
	"errors"
	"net"
	"os"
)

// Option configures a Mutex.
type Option func(*config) error

type config struct {
	id        []byte
	revocable bool
}

// WithParticipantID sets the data of this process's lock nodes, which
// Participants reports (default: the first non-loopback IPv4 address, as
// Curator, else the hostname).
func WithParticipantID(id string) Option {
	return func(c *config) error {
		if id == "" {
			return errors.New("mutex: empty participant id")
		}
		c.id = []byte(id)
		return nil
	}
}

// WithRevocable makes holds watch their lock node for Curator's revocation
// requests (see Revoke and Hold.Revoked). It costs one watch per hold.
func WithRevocable() Option {
	return func(c *config) error { c.revocable = true; return nil }
}

func buildConfig(opts []Option) (config, error) {
	c := config{id: []byte(DefaultParticipantID())}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// DefaultParticipantID is the first non-loopback IPv4 address of this host,
// as Curator's default, or the hostname when there is none.
func DefaultParticipantID() string {
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
		}
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "unknown"
}
