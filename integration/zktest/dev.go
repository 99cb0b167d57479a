package zktest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
)

// StartDev starts a throwaway standalone server outside any test, for people
// to use by hand (zkr dev): the same server the tests get, started through
// Standalone with Main's stand-in for a testing.TB. It listens on 127.0.0.1
// at port (0: a free one) and returns the address clients connect to
// directly, without the fault proxy. stop kills the server and removes its
// data; call it once done (it is safe to call more than once). If the
// process dies without calling stop, the kernel kills the server with it.
//
// StartDev always starts its own server: it refuses to run with ZK_CONNECT
// set rather than hand out an external server as a throwaway one.
func StartDev(port int) (connect string, stop func(), err error) {
	if os.Getenv("ZK_CONNECT") != "" {
		return "", nil, errors.New("zktest: ZK_CONNECT is set; StartDev starts its own server, unset it first")
	}
	if port < 0 || port > 65535 {
		return "", nil, fmt.Errorf("zktest: port %d out of range", port)
	}
	if port != 0 {
		// The server would only say so in its log; say it here.
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return "", nil, fmt.Errorf("zktest: port %d is not free: %w", port, err)
		}
		l.Close()
	}
	tb := &devTB{mainTB: &mainTB{}}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(mainFatal); !ok {
				panic(r)
			}
			tb.cleanup()
			err = errors.New(tb.msg)
		}
	}()
	c := Standalone(tb, WithClientPort(port))
	return strings.Join(c.DirectAddrs(), ","), sync.OnceFunc(tb.cleanup), nil
}

// devTB is mainTB that turns a fatal error into StartDev's error instead of
// printing it as Main's.
type devTB struct {
	*mainTB
	msg string
}

func (*devTB) Name() string { return "zktest.StartDev" }

func (tb *devTB) Fatalf(format string, args ...any) {
	tb.msg = fmt.Sprintf(format, args...)
	tb.mu.Lock()
	tb.failed = true
	tb.mu.Unlock()
	panic(mainFatal{})
}

func (tb *devTB) Skipf(format string, args ...any) {
	tb.Fatalf("cannot skip: "+format, args...)
}
