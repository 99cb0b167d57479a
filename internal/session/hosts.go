package session

import (
	"math/rand/v2"
	"sync"
)

// namedHosts is a go-zookeeper HostProvider that hands out the servers as
// given ("host:port"), unresolved. go-zookeeper's default resolves them
// once, up front, and dials IP addresses: over TLS that leaves nothing but
// the IP to verify the certificate against, so a certificate for
// zk1.example.com fails and a wrong one that names the IP passes. With the
// names kept, the dialer resolves each time and verifies the name.
type namedHosts struct {
	mu      sync.Mutex
	servers []string
	curr    int
	last    int // index of the last server connected to; -1 for none
}

func (h *namedHosts) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers = append([]string(nil), servers...)
	// Spread clients over the ensemble, as go-zookeeper's default does.
	rand.Shuffle(len(h.servers), func(i, j int) { h.servers[i], h.servers[j] = h.servers[j], h.servers[i] })
	h.curr, h.last = -1, -1
	return nil
}

func (h *namedHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

// Next returns the next server; retryStart is true once every server has
// been tried since the last successful connection.
func (h *namedHosts) Next() (server string, retryStart bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart = h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], retryStart
}

func (h *namedHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
}
