package framework

// DefaultMaxRequestSize is the largest request a ZooKeeper server reads
// with its default settings: jute.maxbuffer, 0xfffff bytes, bounds the
// length of every packet it receives (the request header and body, not
// the packet's own 4-byte length).
const DefaultMaxRequestSize = 0xfffff

// WithMaxRequestSize sets the largest request the client sends (default
// DefaultMaxRequestSize).
func WithMaxRequestSize(n int) Option { return func(o *options) { o.maxRequest = n } }

// MaxRequestSize returns the largest request the client sends (see
// WithMaxRequestSize).
func (c *Client) MaxRequestSize() int { return c.maxRequest }
