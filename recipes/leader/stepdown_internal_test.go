package leader

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// leadGate stops the latch's run goroutine at the log line setTerm writes
// under its lock, once armed: the term is set, but lead has not reached
// its select yet.
type leadGate struct {
	armed chan struct{}
	at    chan struct{}
	free  chan struct{}
}

type gateHandler struct {
	slog.Handler
	g *leadGate
}

func (h gateHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "leader latch: leading" {
		select {
		case <-h.g.armed:
			h.g.at <- struct{}{}
			<-h.g.free
		default:
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h gateHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return gateHandler{h.Handler.WithAttrs(a), h.g}
}

func (h gateHandler) WithGroup(n string) slog.Handler {
	return gateHandler{h.Handler.WithGroup(n), h.g}
}

// releaseWaiting reports whether a term's Release is inside the latch's
// release callback, past the step-down signal, waiting for lead.
func releaseWaiting() bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "leader.(*Latch).lead.func1")
}

// A term released as it is lost steps down all the same: lead finds both
// the loss and the release ready when it reaches its select, and whichever
// it takes, the released term's node never leads again (the next term has
// a new node, so a new token). Repeated, since the select picks at random.
func TestReleasedTermLostAtOnceNeverLeadsAgain(t *testing.T) {
	cl := zktest.Standalone(t)
	g := &leadGate{armed: make(chan struct{}, 1), at: make(chan struct{}), free: make(chan struct{})}
	log := slog.New(gateHandler{slog.NewTextHandler(testWriter{t}, nil), g})
	c := testkit.Client(t, cl.Addrs(), framework.WithLogger(log))
	l, err := NewLatch(c, "/elect/stepdown-lost", WithParticipantID("a"))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })

	g.armed <- struct{}{}
	require.NoError(t, l.Start(testkit.Ctx(t, 10*time.Second)))
	for i := 0; i < 8; i++ {
		wait(t, g.at, "lead to set its term")
		released := l.term // written before the gate: the channel orders it
		cl.Proxy().Cut()
		wait(t, released.Done(), "the term to be lost")
		relErr := make(chan error, 1)
		go func() { relErr <- released.Release() }()
		require.Eventually(t, releaseWaiting, 10*time.Second, time.Millisecond)
		g.free <- struct{}{}
		require.ErrorIs(t, <-relErr, zkrecipes.ErrHoldLost)

		next, err := l.Await(testkit.Ctx(t, 30*time.Second))
		require.NoError(t, err)
		require.NotEqual(t, released.Token(), next.Token(), "round %d: the released term's node leads again", i)
		g.armed <- struct{}{}
		releaseNext(t, next)
	}
}

func releaseNext(t *testing.T, h *hold.Hold) {
	t.Helper()
	if err := h.Release(); err != nil && !errors.Is(err, zkrecipes.ErrHoldLost) {
		t.Fatalf("release: %v", err)
	}
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
