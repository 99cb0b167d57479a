package zktest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TLS is a throwaway certificate authority with a server and a client
// certificate signed by it, written as PEM files into a test's temporary
// directory. Give it to WithTLS or WithMutualTLS to make the servers listen on
// a TLS port, and connect with ClientConfig or Dial.
//
// Keys are ECDSA P-256 in PKCS#8 ("PRIVATE KEY"), which ZooKeeper 3.8 loads
// with ssl.keyStore.type=PEM.
type TLS struct {
	// CAFile is the CA certificate (PEM), the servers' trust store.
	CAFile string
	// ServerPEM holds the server's private key and certificate (PEM), valid
	// for localhost, 127.0.0.1 and ::1; it is the servers' key store.
	ServerPEM string
	// ClientPEM holds a client private key and certificate (PEM) signed by
	// the CA, for clients that read their identity from files.
	ClientPEM string

	roots      *x509.CertPool
	clientCert tls.Certificate
}

// tlsConfig is how a cluster's servers use a TLS.
type tlsConfig struct {
	files             *TLS
	requireClientCert bool
}

// NewTLS generates a CA, a server and a client certificate for t and writes
// them into t.TempDir(). They are valid from an hour ago for a day, and the
// server's names localhost, 127.0.0.1 and ::1.
func NewTLS(t testing.TB) *TLS {
	t.Helper()
	return NewTLSFor(t, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback})
}

// NewTLSFor is NewTLS with a server certificate that names only dnsNames
// and ips: to test that clients check the name they were given.
func NewTLSFor(t testing.TB, dnsNames []string, ips []net.IP) *TLS {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	caKey := newKey(t)
	serial := newSerial(t)
	caTmpl := &x509.Certificate{
		SerialNumber: serial,
		// A name of its own, so that a client trusting another NewTLS's CA
		// is told the issuer is unknown rather than that a signature is bad.
		Subject:               pkix.Name{CommonName: fmt.Sprintf("zktest CA %x", serial)},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("zktest: CA certificate: %v", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatalf("zktest: CA certificate: %v", err)
	}
	tl := &TLS{
		CAFile:    filepath.Join(dir, "ca.pem"),
		ServerPEM: filepath.Join(dir, "server.pem"),
		ClientPEM: filepath.Join(dir, "client.pem"),
		roots:     x509.NewCertPool(),
	}
	tl.roots.AddCert(ca)
	writePEM(t, tl.CAFile, 0o644, &pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	issue(t, ca, caKey, tl.ServerPEM, "zktest server", x509.ExtKeyUsageServerAuth, dnsNames, ips)
	tl.clientCert = issue(t, ca, caKey, tl.ClientPEM, "zktest client", x509.ExtKeyUsageClientAuth,
		[]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback})
	return tl
}

// issue signs a certificate for dnsNames and ips and writes its key and
// certificate to path.
func issue(t testing.TB, ca *x509.Certificate, caKey *ecdsa.PrivateKey, path, cn string, usage x509.ExtKeyUsage, dnsNames []string, ips []net.IP) tls.Certificate {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(t),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    ca.NotBefore,
		NotAfter:     ca.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatalf("zktest: certificate %q: %v", cn, err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("zktest: key for %q: %v", cn, err)
	}
	writePEM(t, path, 0o600,
		&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8},
		&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("zktest: generate key: %v", err)
	}
	return key
}

func newSerial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatalf("zktest: serial number: %v", err)
	}
	return n
}

func writePEM(t testing.TB, path string, perm os.FileMode, blocks ...*pem.Block) {
	t.Helper()
	var b []byte
	for _, bl := range blocks {
		b = append(b, pem.EncodeToMemory(bl)...)
	}
	if err := os.WriteFile(path, b, perm); err != nil {
		t.Fatalf("zktest: %v", err)
	}
}

// ClientConfig returns a new client configuration that trusts only the CA,
// expects the server name "localhost" whatever address is dialled (a proxy's
// included), and presents the client certificate when a server asks for one.
// Change the copy freely, for example drop Certificates to test that a
// WithMutualTLS server refuses anonymous clients.
func (tl *TLS) ClientConfig() *tls.Config {
	return &tls.Config{
		RootCAs:      tl.roots,
		ServerName:   "localhost",
		Certificates: []tls.Certificate{tl.clientCert},
		MinVersion:   tls.VersionTLS12,
	}
}

// Dial connects to addr and completes a TLS handshake with ClientConfig, all
// within timeout. Its signature is go-zookeeper's zk.Dialer, so it plugs into
// zk.WithDialer.
func (tl *TLS) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, addr, tl.ClientConfig())
}

// WithTLS makes every server also listen on a TLS client port (see
// Server.SecureAddr and Cluster.SecureAddrs) with tl's server certificate.
// Clients need no certificate of their own. The plain client port stays, so
// the harness's own checks and plain clients work as before. It needs servers
// the harness starts: with ZK_CONNECT or in a container the test skips.
func WithTLS(tl *TLS) Option {
	return func(c *config) { c.tls = &tlsConfig{files: tl} }
}

// WithMutualTLS is WithTLS with client authentication: the TLS port refuses
// clients that do not present a certificate signed by tl's CA
// (ssl.clientAuth=need).
func WithMutualTLS(tl *TLS) Option {
	return func(c *config) { c.tls = &tlsConfig{files: tl, requireClientCert: true} }
}

// setupTLS checks that the backend can serve TLS and completes the classpath;
// it is a no-op without WithTLS.
func (c *Cluster) setupTLS() {
	t := c.t
	t.Helper()
	if c.cfg.tls == nil {
		return
	}
	if c.backend != backendLocal {
		t.Skipf("zktest: WithTLS needs servers the harness starts from a local install: %s", InstallHint)
	}
	in, err := c.install.ForTLS()
	if err != nil {
		t.Fatalf("zktest: WithTLS: %v", err)
	}
	c.install = in
}

// tlsConfigLines are the zoo.cfg lines for the TLS port. ZooKeeper turns keys
// it does not know (serverCnxnFactory, ssl.*) into zookeeper.-prefixed system
// properties, which is where the Netty factory and ClientX509Util read them.
func (s *Server) tlsConfigLines() []string {
	tc := s.cluster.cfg.tls
	if tc == nil {
		return nil
	}
	clientAuth := "none"
	if tc.requireClientCert {
		clientAuth = "need"
	}
	return []string{
		"secureClientPort=" + strconv.Itoa(s.securePort),
		"secureClientPortAddress=127.0.0.1",
		// TLS needs Netty; the plain port then uses it too.
		"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
		"ssl.keyStore.location=" + tc.files.ServerPEM,
		"ssl.keyStore.type=PEM",
		"ssl.trustStore.location=" + tc.files.CAFile,
		"ssl.trustStore.type=PEM",
		"ssl.clientAuth=" + clientAuth,
	}
}

// secureListening reports whether the server's TLS port accepts connections
// (true without WithTLS). A standalone server answers srvr on its plain port
// before it binds the TLS port.
func (s *Server) secureListening() bool {
	if s.securePort == 0 {
		return true
	}
	conn, err := net.DialTimeout("tcp", s.SecureAddr(), time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// SecureAddr is the server's own TLS client address, bypassing every proxy.
// The test fails if the cluster was started without WithTLS.
func (s *Server) SecureAddr() string {
	if s.securePort == 0 {
		s.cluster.t.Fatalf("zktest: SecureAddr: the cluster was started without WithTLS")
	}
	return "127.0.0.1:" + strconv.Itoa(s.securePort)
}

// SecureProxy is the cluster's shared proxy in front of the TLS ports, the
// one SecureAddrs uses; it is nil without WithTLS. A proxy forwards bytes, so
// the TLS session runs end to end between client and server, and every fault
// works as on the plain ports.
func (c *Cluster) SecureProxy() *Proxy { return c.secureProxy }

// SecureAddrs returns the TLS client addresses of every server, through the
// shared SecureProxy; Server.SecureAddr gives the direct ones. The test fails
// if the cluster was started without WithTLS.
func (c *Cluster) SecureAddrs() []string {
	c.t.Helper()
	if c.secureProxy == nil {
		c.t.Fatalf("zktest: SecureAddrs: the cluster was started without WithTLS")
	}
	return c.secureProxy.Addrs()
}

// SecureConnectString is SecureAddrs joined with commas.
func (c *Cluster) SecureConnectString() string { return strings.Join(c.SecureAddrs(), ",") }

// NewSecureProxy is NewProxy for the TLS ports: a private proxy in front of
// them, closed when the test ends, so a fault hits one TLS client alone.
func (c *Cluster) NewSecureProxy() *Proxy {
	c.t.Helper()
	if c.cfg.tls == nil {
		c.t.Fatalf("zktest: NewSecureProxy: the cluster was started without WithTLS")
	}
	targets := make([]func() string, len(c.servers))
	for i, s := range c.servers {
		targets[i] = s.SecureAddr
	}
	return c.newProxy(targets)
}
