package zkserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// StartDev starts a throwaway standalone server for people to use by hand
// (zkr dev): the server the tests get, on 127.0.0.1 at port (0: a free one),
// with a temporary data directory. It returns the address clients connect
// to. stop kills the server and removes its data; call it once done (more
// than once is safe). If the process dies without calling stop, the kernel
// kills the server with it.
//
// StartDev always starts its own server: it refuses to run with ZK_CONNECT
// set rather than hand out an external server as a throwaway one.
func StartDev(port int) (connect string, stop func(), err error) {
	if os.Getenv("ZK_CONNECT") != "" {
		return "", nil, errors.New("ZK_CONNECT is set; a dev server is always a new one, unset it first")
	}
	if port < 0 || port > 65535 {
		return "", nil, fmt.Errorf("port %d out of range", port)
	}
	release := func() {}
	if port == 0 {
		ports, free, err := FreePorts(1)
		if err != nil {
			return "", nil, fmt.Errorf("free port: %w", err)
		}
		port, release = ports[0], free
	} else {
		// The server would only say so in its log; say it here.
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return "", nil, fmt.Errorf("port %d is not free: %w", port, err)
		}
		l.Close()
	}
	in, err := Locate()
	if err != nil {
		release()
		return "", nil, fmt.Errorf("no local ZooKeeper: %v\n  install one with: %s", err, devInstallHint)
	}
	dir, err := os.MkdirTemp("", "zkr-dev-")
	if err != nil {
		release()
		return "", nil, err
	}
	cfg := DefaultConfig()
	s := &Server{ID: 1, ClientPort: port, Dir: filepath.Join(dir, "server1"), Install: in, Config: &cfg}
	stop = sync.OnceFunc(func() {
		s.Signal(syscall.SIGKILL, 10*time.Second)
		os.RemoveAll(dir)
		release()
	})
	if err := s.WriteConfig(nil, nil); err != nil {
		stop()
		return "", nil, err
	}
	if err := s.Start(); err != nil {
		stop()
		return "", nil, err
	}
	if err := s.WaitServing(60*time.Second, nil); err != nil {
		stop()
		return "", nil, err
	}
	return s.DirectAddr(), stop, nil
}
