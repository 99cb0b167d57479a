package zktest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `docker port` prints one host:port a line, for each address family the
// port is published on; the harness dials the first, on the loopback
// interface when Docker published it on every interface.
func TestPublishedAddrIsTheFirstAddressOnLoopback(t *testing.T) {
	for out, want := range map[string]string{
		"127.0.0.1:49153\n":                "127.0.0.1:49153",
		"0.0.0.0:49154\n[::]:49154\n":      "127.0.0.1:49154",
		"[::]:49155\n":                     "127.0.0.1:49155",
		"[::1]:49156\n":                    "[::1]:49156",
		"\n127.0.0.1:49157\n127.0.0.1:1\n": "127.0.0.1:49157",
	} {
		got, err := publishedAddr(out)
		require.NoError(t, err, "%q", out)
		assert.Equal(t, want, got, "%q", out)
	}
	_, err := publishedAddr("Error: No public port '2181/tcp' published\n")
	assert.ErrorContains(t, err, "no published port")
}
