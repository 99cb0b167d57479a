package framework_test

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

func dial(t *testing.T, addrs []string, opts ...framework.Option) *framework.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := framework.Dial(ctx, addrs, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// expect reads events until the states in want have been seen in order, and
// returns the events that matched.
func expect(t *testing.T, s *framework.Subscription[conn.Event], timeout time.Duration, want ...conn.State) []conn.Event {
	t.Helper()
	deadline := time.After(timeout)
	var seen, matched []conn.Event
	for len(matched) < len(want) {
		select {
		case ev, ok := <-s.Changes():
			require.True(t, ok, "subscription closed; saw %v", seen)
			seen = append(seen, ev)
			if ev.State == want[len(matched)] {
				matched = append(matched, ev)
			}
		case <-deadline:
			t.Fatalf("saw %v, want %v in order", seen, want)
		}
	}
	return matched
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestDialNegotiatesSessionTimeout(t *testing.T) {
	cl := zktest.Standalone(t, zktest.WithSessionTimeouts(time.Second, 20*time.Second))
	c := dial(t, cl.Addrs(), framework.WithSessionTimeout(500*time.Millisecond))
	assert.Equal(t, conn.StateConnected, c.State())
	s := c.Session()
	assert.NotZero(t, s.ID)
	assert.Equal(t, time.Second, s.Timeout, "the server raised it to its minimum")

	c2 := dial(t, cl.Addrs(), framework.WithSessionTimeout(time.Minute))
	assert.Equal(t, 20*time.Second, c2.Session().Timeout, "the server lowered it to its maximum")
}

func TestCutSuspendsThenReconnectsSameSession(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := dial(t, p.Addrs(), framework.WithSessionTimeout(4*time.Second))
	sub := c.Subscribe()
	t.Cleanup(sub.Close) // its goroutine ends with it, read to the end or not
	before := c.Session()

	p.Cut()
	evs := expect(t, sub, 10*time.Second, conn.StateSuspended, conn.StateReconnected)
	assert.False(t, evs[1].NewSession)
	assert.Equal(t, before.ID, evs[1].SessionID)
	assert.True(t, closed(before.Suspended), "the old link's Suspended channel closed")
	assert.False(t, closed(before.Lost), "the session was not lost")
	after := c.Session()
	assert.Equal(t, before.ID, after.ID)
	assert.False(t, closed(after.Suspended), "a fresh Suspended channel for the new link")
}

// A subscription begins with the state as it stands, then every change:
// one made after a reconnect learns it is on a new link of the same
// session, and is told the next change.
func TestSubscribeBeginsWithTheStateAsItStands(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := dial(t, p.Addrs(), framework.WithSessionTimeout(4*time.Second))
	early := c.Subscribe()
	t.Cleanup(early.Close)
	p.Cut()
	expect(t, early, 10*time.Second, conn.StateSuspended, conn.StateReconnected)

	sub := c.Subscribe()
	t.Cleanup(sub.Close)
	first := <-sub.Changes()
	assert.Equal(t, conn.StateReconnected, first.State)
	assert.Equal(t, c.Session().ID, first.SessionID)
	assert.False(t, first.NewSession)
	p.Cut()
	expect(t, sub, 10*time.Second, conn.StateSuspended, conn.StateReconnected)
}

func TestExpiryIsLostThenReconnectedWithNewSession(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := dial(t, p.Addrs(), framework.WithSessionTimeout(2*time.Second))
	sub := c.Subscribe()
	t.Cleanup(sub.Close)
	before := c.Session()

	zktest.ExpireSession(t, p, before.ID)
	evs := expect(t, sub, 20*time.Second, conn.StateSuspended, conn.StateLost, conn.StateReconnected)
	assert.Equal(t, before.ID, evs[1].SessionID)
	assert.True(t, evs[2].NewSession)
	assert.NotEqual(t, before.ID, evs[2].SessionID)
	assert.True(t, closed(before.Lost))
	assert.Equal(t, evs[2].SessionID, c.Session().ID)
}

func TestLongSuspensionIsLostBeforeTheServerSaysSo(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := dial(t, p.Addrs(), framework.WithSessionTimeout(2*time.Second))
	sub := c.Subscribe()
	t.Cleanup(sub.Close)
	before := c.Session()

	p.Blackhole()
	evs := expect(t, sub, 20*time.Second, conn.StateSuspended, conn.StateLost)
	assert.True(t, evs[1].Simulated, "no server could tell the client")
	// Suspended comes after the 2/3 receive timeout; Lost one session timeout
	// later.
	assert.GreaterOrEqual(t, evs[1].Time.Sub(evs[0].Time), 2*time.Second-100*time.Millisecond)
	assert.True(t, closed(before.Lost))

	p.Heal()
	ev := expect(t, sub, 20*time.Second, conn.StateReconnected)[0]
	assert.True(t, ev.NewSession)
}

// A session the client declared lost (simulated expiry) is never resumed,
// even though the server still has it: with the replies dropped, the server
// hears the pings and keeps the session while the client hears nothing and
// gives it up. Had the client resumed it once the link healed, what its
// recipes abandoned at the loss (a lock node left for the server's expiry)
// would never be deleted: the session would live on under a new epoch.
// Instead it gets a new session, and the old one expires on the server with
// its ephemeral nodes.
func TestASessionDeclaredLostIsNeverResumed(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := dial(t, p.Addrs(), framework.WithSessionTimeout(2*time.Second))
	sub := c.Subscribe()
	t.Cleanup(sub.Close)
	before := c.Session()
	_, err := c.Create(t.Context(), "/abandoned", nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)

	p.DropReplies()
	evs := expect(t, sub, 20*time.Second, conn.StateSuspended, conn.StateLost)
	require.True(t, evs[1].Simulated)
	require.True(t, cl.SessionAlive(before.ID), "the server still has the session the client gave up")

	p.Heal()
	backOnANewSession(t, cl, c, sub, before.ID)
}

// The race the expiry can lose: the client's connect request resumes the
// session on the server, and the answer comes back only after the client
// declared the session lost. That answer never reaches go-zookeeper (it
// would have sent on the session at once): the link is dropped and the
// client takes a new session.
func TestAResumeAnsweredAfterTheExpiryIsRefused(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	var logs testkit.SyncBuffer
	c := dial(t, p.Addrs(), framework.WithSessionTimeout(9*time.Second), framework.WithSimulatedExpiry(30),
		framework.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	sub := c.Subscribe()
	t.Cleanup(sub.Close)
	before := c.Session()
	_, err := c.Create(t.Context(), "/abandoned", nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)

	// The link is cut (Suspended) and every answer comes 4.3s late: the
	// client dials again within a second, the server resumes the session
	// on hearing the request, and the simulated expiry declares it lost
	// 2.7s after Suspended, before the answer arrives and well before the
	// client would give up waiting for it (2/3 of the timeout, 6s).
	p.DelayReplies(4300 * time.Millisecond)
	p.Cut()
	evs := expect(t, sub, 20*time.Second, conn.StateSuspended, conn.StateLost)
	require.True(t, evs[1].Simulated)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "declared lost; link dropped") }, 20*time.Second, 50*time.Millisecond,
		"the late answer resuming the session was refused")
	p.Heal()
	backOnANewSession(t, cl, c, sub, before.ID)
}

// backOnANewSession checks that c, whose session old was declared lost
// with its node /abandoned, comes back on a new session, and that old ends
// on the server with the node.
func backOnANewSession(t *testing.T, cl *zktest.Cluster, c *framework.Client, sub *framework.Subscription[conn.Event], old int64) {
	t.Helper()
	ev := expect(t, sub, 30*time.Second, conn.StateReconnected)[0]
	assert.True(t, ev.NewSession)
	require.NotEqual(t, old, ev.SessionID, "the session declared lost was resumed")
	require.Eventually(t, func() bool { return !cl.SessionAlive(old) }, 20*time.Second, 50*time.Millisecond,
		"the old session, never resumed, expires on the server")
	ok, _, err := c.Exists(t.Context(), "/abandoned")
	require.NoError(t, err)
	assert.False(t, ok, "the old session's ephemeral node went with it")
}

func TestSimulatedExpiryCanBeTurnedOff(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := dial(t, p.Addrs(), framework.WithSessionTimeout(time.Second), framework.WithSimulatedExpiry(0))
	sub := c.Subscribe()
	t.Cleanup(sub.Close)
	p.Blackhole()
	expect(t, sub, 10*time.Second, conn.StateSuspended)
	// The server expires the session after 1s; with the link dead the client
	// cannot hear it. Wait until the server has, then check nothing was
	// declared locally.
	sid := c.Session().ID
	require.Eventually(t, func() bool { return !cl.SessionAlive(sid) }, 20*time.Second, 50*time.Millisecond)
	assert.Equal(t, conn.StateSuspended, c.State())
	p.Heal()
	expect(t, sub, 20*time.Second, conn.StateLost, conn.StateReconnected)
}

func TestEnsembleMemberLossMovesSessionToAnotherServer(t *testing.T) {
	cl := zktest.Ensemble(t, 3)
	c := dial(t, cl.Addrs(), framework.WithSessionTimeout(6*time.Second))
	sub := c.Subscribe()
	t.Cleanup(sub.Close)
	sid := c.Session().ID

	i := slices.Index(cl.Addrs(), c.Server())
	require.GreaterOrEqual(t, i, 0, "client on %s", c.Server())
	cl.Servers()[i].Kill()

	evs := expect(t, sub, 30*time.Second, conn.StateSuspended, conn.StateReconnected)
	assert.False(t, evs[1].NewSession)
	assert.Equal(t, sid, evs[1].SessionID)
	assert.NotEqual(t, cl.Addrs()[i], c.Server())
}

// readOnlySurvivor starts an ensemble whose members may serve reads alone,
// kills two of three, and returns the survivor's proxied address once it
// serves read-only. ZooKeeper 3.8 only creates sessions in read-only mode
// when local sessions are enabled: a global session needs a quorum.
func readOnlySurvivor(t *testing.T) string {
	cl := zktest.Ensemble(t, 3,
		zktest.WithSystemProperty("readonlymode.enabled", "true"),
		zktest.WithConfig("localSessionsEnabled=true"))
	cl.Server(1).Kill()
	cl.Server(2).Kill()
	require.Eventually(t, func() bool {
		out, err := zktest.FourLetter(cl.Server(3).DirectAddr(), "isro", time.Second)
		return err == nil && strings.TrimSpace(out) == "ro"
	}, 60*time.Second, 50*time.Millisecond, "the survivor never went read-only")
	return cl.Addrs()[2]
}

func TestReadOnlyServerIsReported(t *testing.T) {
	c := dial(t, []string{readOnlySurvivor(t)}, framework.WithReadOnly())
	assert.Equal(t, conn.StateReadOnly, c.State())
	_, _, err := c.Get(t.Context(), "/")
	assert.NoError(t, err, "reads are served")
	_, err = c.Create(t.Context(), "/w", nil)
	assert.Error(t, err, "writes are not")
}

func TestReadOnlyServerRefusesClientsThatDidNotAsk(t *testing.T) {
	addr := readOnlySurvivor(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	_, err := framework.Dial(ctx, []string{addr})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestDigestAuthIsReplayedAfterReconnect(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := dial(t, p.Addrs(), framework.WithDigestAuth("alice", "secret"))
	_, err := c.Create(t.Context(), "/mine", nil, framework.WithACL(zk.AuthACL(zk.PermAll)))
	require.NoError(t, err)

	sub := c.Subscribe()
	t.Cleanup(sub.Close)
	p.Cut()
	expect(t, sub, 10*time.Second, conn.StateSuspended, conn.StateReconnected)
	_, err = c.Set(t.Context(), "/mine", []byte("x"), -1)
	assert.NoError(t, err, "credentials were replayed on the new link")

	other := dial(t, cl.Addrs())
	_, err = other.Set(t.Context(), "/mine", []byte("y"), -1)
	assert.ErrorIs(t, err, zk.ErrNoAuth)
}

func TestSlowSubscriberMissesNothing(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	// Not shorter: the exact sequence below would gain a Suspended whenever
	// a loaded machine stalls the link for 2/3 of the timeout.
	c := dial(t, p.Addrs(), framework.WithSessionTimeout(4*time.Second))
	sub := c.Subscribe() // not read until the end
	t.Cleanup(sub.Close)
	p.Cut()
	require.Eventually(t, func() bool { return c.State() == conn.StateReconnected }, 10*time.Second, 10*time.Millisecond)
	zktest.ExpireSession(t, p, c.Session().ID)
	require.Eventually(t, func() bool {
		return c.State() == conn.StateReconnected && closed(c.Session().Suspended) == false
	}, 20*time.Second, 10*time.Millisecond)
	var got []conn.State
	for len(got) < 6 {
		got = append(got, (<-sub.Changes()).State)
	}
	assert.Equal(t, []conn.State{conn.StateConnected, // as it stood
		conn.StateSuspended, conn.StateReconnected, conn.StateSuspended, conn.StateLost, conn.StateReconnected}, got)
}

func TestCloseEndsSessionAndSignals(t *testing.T) {
	cl := zktest.Standalone(t)
	c := dial(t, cl.Addrs())
	_, err := c.Create(t.Context(), "/eph", nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)
	s := c.Session()
	sub := c.Subscribe()
	t.Cleanup(sub.Close)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "idempotent")

	assert.True(t, closed(s.Lost))
	assert.True(t, closed(s.Suspended))
	ev, ok := <-sub.Changes()
	assert.True(t, ok && ev.State == conn.StateConnected, "first the state as it stood: %v", ev)
	ev, ok = <-sub.Changes()
	assert.True(t, ok && ev.State == conn.StateClosed, "the last event is Closed: %v", ev)
	_, ok = <-sub.Changes()
	assert.False(t, ok, "subscription channel closed")
	_, err = c.WaitConnected(t.Context())
	assert.ErrorIs(t, err, zkrecipes.ErrClosed)
	assert.Equal(t, conn.StateClosed, c.State())

	other := dial(t, cl.Addrs())
	ok, _, err = other.Exists(t.Context(), "/eph")
	require.NoError(t, err)
	assert.False(t, ok, "the session's ephemeral went with it")
}

func TestDialGivesUpWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := framework.Dial(ctx, []string{"127.0.0.1:1"}) // nothing listens on port 1
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// A Dial with no deadline of its own does not wait for ever: it gives up
// after the dial timeout (15 s by default, as Curator's), and says why the
// last connection attempt failed. (Before: Background waited for ever, and
// a deadline's error named no cause.)
func TestDialGivesUpAfterItsTimeoutAndSaysWhy(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		_, err := framework.Dial(context.Background(), []string{"127.0.0.1:1"})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorContains(t, err, "connection refused")
		took := time.Since(start)
		assert.True(t, took > 14*time.Second && took < 20*time.Second, "gave up after %v, not the default 15s", took)
	})
	t.Run("set", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		_, err := framework.Dial(context.Background(), []string{"127.0.0.1:1"}, framework.WithDialTimeout(time.Second))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorContains(t, err, "connection refused")
		assert.Less(t, time.Since(start), 5*time.Second)
	})
	t.Run("context first", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := framework.Dial(ctx, []string{"127.0.0.1:1"})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorContains(t, err, "connection refused")
	})
}

// A name that does not resolve is a failure to connect, which says so, not
// bad input. (Before: "invalid option".)
func TestDialToANameThatDoesNotResolveSaysSo(t *testing.T) {
	_, err := framework.Dial(t.Context(), []string{"no-such-host.invalid:2181"}, framework.WithDialTimeout(2*time.Second))
	require.Error(t, err)
	assert.NotErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	assert.ErrorContains(t, err, "no-such-host.invalid")
}

// A TLS server that accepts the connection and never answers the handshake:
// the error names the server and the handshake, not a bare "context
// deadline exceeded" (which the handshake's own timeout gave).
func TestDialOverTLSToAServerThatNeverAnswersSaysTheHandshakeTimedOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			defer nc.Close() // held open, never answered, until the test ends
		}
	}()
	_, err = framework.Dial(t.Context(), []string{ln.Addr().String()}, framework.WithTLS(&tls.Config{MinVersion: tls.VersionTLS12}),
		framework.WithConnectTimeout(200*time.Millisecond), framework.WithDialTimeout(time.Second))
	require.Error(t, err)
	assert.ErrorContains(t, err, "last connection attempt: TLS handshake with "+ln.Addr().String())
}

// ZooKeeper's chroot syntax, "host:port/app", is the client's namespace,
// as the Java client takes it. (Before: the library hung on it.)
func TestAChrootInTheServersIsTheNamespace(t *testing.T) {
	cl := zktest.Standalone(t)
	addrs := cl.Addrs()
	addrs[len(addrs)-1] += "/app/sub"
	c := dial(t, addrs)
	assert.Equal(t, "/app/sub", c.Namespace())
	_, err := c.Create(t.Context(), "/x", nil)
	require.NoError(t, err)
	obs := dial(t, cl.Addrs())
	ok, _, err := obs.Exists(t.Context(), "/app/sub/x")
	require.NoError(t, err)
	assert.True(t, ok, "the node went elsewhere than under the chroot")

	_, err = framework.Dial(t.Context(), addrs, framework.WithNamespace("other"))
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument, "a chroot and another namespace")
	bad := append([]string{cl.Addrs()[0] + "/app"}, cl.Addrs()...)
	_, err = framework.Dial(t.Context(), bad)
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument, "a chroot before the last server")
}

// A server that accepts the connection and never answers the handshake
// holds go-zookeeper for ten receive timeouts; a Dial whose ctx ends must
// still return about then, its Close not waiting for the handshake.
func TestDialGivesUpPromptlyOnAServerThatDoesNotAnswer(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	p.Blackhole()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := framework.Dial(ctx, p.Addrs(), framework.WithSessionTimeout(10*time.Second))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second, "Dial (and its Close) waited for the handshake")
	p.Heal()
}

// A server that takes the connection and never answers the connect
// request (a restart caught halfway, a lost answer) is given up after the
// Java client's connect timeout, not go-zookeeper's ten receive timeouts
// (20s here): the client dials again, as it must to find its session
// before the server expires it.
func TestAConnectRequestNeverAnsweredIsGivenUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c // held open, never answered
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for {
			select {
			case c := <-accepted:
				c.Close()
			default:
				return
			}
		}
	})
	_, err = framework.Dial(t.Context(), []string{ln.Addr().String()},
		framework.WithSessionTimeout(3*time.Second), framework.WithDialTimeout(8*time.Second))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// 2s per attempt (2/3 of the timeout) and go-zookeeper's second
	// between attempts on one server: three in 8s.
	assert.GreaterOrEqual(t, len(accepted), 3, "connection attempts while the server said nothing")
}

func TestDialRejectsBadOptionsBeforeConnecting(t *testing.T) {
	for name, tc := range map[string]struct {
		servers []string
		opts    []framework.Option
	}{
		"no servers":        {nil, nil},
		"empty server":      {[]string{""}, nil},
		"zero timeout":      {[]string{"127.0.0.1:1"}, []framework.Option{framework.WithSessionTimeout(0)}},
		"percent above 100": {[]string{"127.0.0.1:1"}, []framework.Option{framework.WithSimulatedExpiry(150)}},
		"negative percent":  {[]string{"127.0.0.1:1"}, []framework.Option{framework.WithSimulatedExpiry(-1)}},
		"connect timeout":   {[]string{"127.0.0.1:1"}, []framework.Option{framework.WithConnectTimeout(-time.Second)}},
		// int32 milliseconds on the wire: it would wrap and never connect.
		"timeout beyond the protocol": {[]string{"127.0.0.1:1"}, []framework.Option{framework.WithSessionTimeout(conn.MaxSessionTimeout + time.Millisecond)}},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			_, err := framework.Dial(ctx, tc.servers, tc.opts...)
			assert.True(t, errors.Is(err, zkrecipes.ErrInvalidArgument), "got %v", err)
		})
	}
}

func TestTLSSessionSurvivesCut(t *testing.T) {
	tl := zktest.NewTLS(t)
	cl := zktest.Standalone(t, zktest.WithTLS(tl))
	p := cl.NewSecureProxy()
	c := dial(t, p.Addrs(), framework.WithTLS(tl.ClientConfig()))
	_, err := c.Create(t.Context(), "/over-tls", []byte("v"))
	require.NoError(t, err)

	sub := c.Subscribe()
	t.Cleanup(sub.Close)
	p.Cut()
	ev := expect(t, sub, 10*time.Second, conn.StateSuspended, conn.StateReconnected)[1]
	assert.False(t, ev.NewSession)
	data, _, err := c.Get(t.Context(), "/over-tls")
	require.NoError(t, err)
	assert.Equal(t, "v", string(data))
}

func TestTLSRejectsUntrustedServer(t *testing.T) {
	tl := zktest.NewTLS(t)
	cl := zktest.Standalone(t, zktest.WithTLS(tl))
	untrusting := &tls.Config{ServerName: "localhost", MinVersion: tls.VersionTLS12} // system roots only
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	_, err := framework.Dial(ctx, cl.SecureAddrs(), framework.WithTLS(untrusting))
	assert.ErrorIs(t, err, context.DeadlineExceeded, "no session without a trusted certificate")
}

// A server list of host names is verified against the host name, not the
// address it resolves to: a certificate that names only the DNS name is
// accepted, and one that names the right IP but another host is refused.
func TestTLSVerifiesTheHostNameOfTheServerList(t *testing.T) {
	byName := func(addrs []string) []string {
		out := make([]string, len(addrs))
		for i, a := range addrs {
			_, port, err := net.SplitHostPort(a)
			require.NoError(t, err)
			out[i] = net.JoinHostPort("localhost", port)
		}
		return out
	}
	noName := func(tl *zktest.TLS) *tls.Config {
		cfg := tl.ClientConfig()
		cfg.ServerName = "" // verify what the server list names
		return cfg
	}

	named := zktest.NewTLSFor(t, []string{"localhost"}, nil) // no IP in the certificate
	cl := zktest.Standalone(t, zktest.WithTLS(named))
	c := dial(t, byName(cl.SecureAddrs()), framework.WithTLS(noName(named)))
	assert.Equal(t, conn.StateConnected, c.State())

	wrong := zktest.NewTLSFor(t, []string{"zk.elsewhere.test"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	cl2 := zktest.Standalone(t, zktest.WithTLS(wrong))
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	_, err := framework.Dial(ctx, byName(cl2.SecureAddrs()), framework.WithTLS(noName(wrong)))
	assert.ErrorIs(t, err, context.DeadlineExceeded, "a certificate for another host was accepted because it names the IP")

	// The control: the same server, certificate and list are accepted when
	// the name to verify is the certificate's, so the refusal above is the
	// name check and nothing else (a server down, a port closed).
	cfg := noName(wrong)
	cfg.ServerName = "zk.elsewhere.test"
	c2 := dial(t, byName(cl2.SecureAddrs()), framework.WithTLS(cfg))
	assert.Equal(t, conn.StateConnected, c2.State())
}
