package chaos

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Fence is the resource the locks protect: a register that takes a write
// only with a fencing token at least as high as the last one it took, as
// Kleppmann's storage service does. It records every write, taken or
// refused, so the checker can tell what an unfenced register would have
// let through.
type Fence struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}

	mu     sync.Mutex
	last   int64
	writes []Event
}

// StartFence listens on a free loopback port.
func StartFence() (*Fence, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &Fence{ln: ln, done: make(chan struct{})}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(f.done)
		_ = f.srv.Serve(ln)
	}()
	return f, nil
}

// URL is where contenders POST their writes.
func (f *Fence) URL() string { return "http://" + f.ln.Addr().String() + "/write" }

func (f *Fence) serve(w http.ResponseWriter, r *http.Request) {
	token, err := strconv.ParseInt(r.URL.Query().Get("token"), 10, 64)
	if r.Method != http.MethodPost || err != nil {
		http.Error(w, "POST /write?client=&token=", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	// Stamped under the lock, so the records' order is the order of the
	// register's decisions.
	e := Event{T: now(), Kind: KindWrite, Client: r.URL.Query().Get("client"), Token: token}
	if token >= f.last {
		f.last, e.Accepted = token, true
	}
	f.writes = append(f.writes, e)
	f.mu.Unlock()
	if !e.Accepted {
		http.Error(w, "stale token", http.StatusConflict)
	}
}

// Writes returns every write so far, in the order the register decided.
func (f *Fence) Writes() []Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Event(nil), f.writes...)
}

// Reset forgets the register's state, for the next run.
func (f *Fence) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last, f.writes = 0, nil
}

// Close stops the server and waits for its goroutines.
func (f *Fence) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := f.srv.Shutdown(ctx)
	<-f.done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
