package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// errStopping: a signal asked zkr to stop before COMMAND could start.
var errStopping = errors.New("stopping on a signal")

// child is the COMMAND zkr supervises: at most one runs at a time. Signals
// reach it through signal (from any goroutine); losing the hold stops it.
type child struct {
	argv  []string
	grace time.Duration
	log   *logger

	mu       sync.Mutex
	proc     *os.Process // the running COMMAND, the leader of its process group
	stopping bool        // a signal came: no COMMAND starts any more
}

// outcome is how one run of COMMAND ended.
type outcome struct {
	code int   // exit status, 128+S when signal S killed it
	lost error // why the hold ended while COMMAND ran; nil if it did not
}

// run starts COMMAND with env added to zkr's own environment and waits for
// it. If lost closes first, COMMAND is stopped: SIGTERM to its process
// group, SIGKILL after the grace period; why says what was lost. run refuses
// to start COMMAND after a signal (errStopping) or once lost is closed.
func (c *child) run(env []string, lost <-chan struct{}, why func() error) (outcome, error) {
	select {
	case <-lost:
		c.log.printf("hold lost before COMMAND could start: %v", why())
		return outcome{lost: why()}, nil
	default:
	}
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own group, so that a signal reaches COMMAND's children too
		// (a shell's sleep, a make's compilers).
		Setpgid: true,
		// If zkr dies (kill -9), nobody is watching the lock for COMMAND
		// any more: it must not run on unprotected. The kernel sends this
		// when the thread that started COMMAND exits, which for Go means
		// the process: zkr never locks goroutines to threads.
		Pdeathsig: syscall.SIGKILL,
	}
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		return outcome{}, errStopping
	}
	if err := cmd.Start(); err != nil {
		c.mu.Unlock()
		return outcome{code: commandError(err)}, err
	}
	c.proc = cmd.Process
	c.mu.Unlock()

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var out outcome
	var kill <-chan time.Time
	for {
		select {
		case <-exited:
			c.mu.Lock()
			c.proc = nil
			c.mu.Unlock()
			out.code = exitStatus(cmd.ProcessState)
			return out, nil
		case <-lost:
			lost = nil
			out.lost = why()
			c.log.printf("hold lost (%v): stopping COMMAND (SIGTERM, SIGKILL after %v)", out.lost, c.grace)
			c.group(syscall.SIGTERM)
			kill = time.After(c.grace)
		case <-kill:
			kill = nil
			c.log.printf("COMMAND still running %v after SIGTERM: SIGKILL", c.grace)
			c.group(syscall.SIGKILL)
		}
	}
}

// group sends sig to the running COMMAND's process group.
func (c *child) group(sig syscall.Signal) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return false
	}
	_ = syscall.Kill(-c.proc.Pid, sig)
	return true
}

// signal passes a signal zkr received on to the running COMMAND, and keeps
// any COMMAND from starting afterwards. It reports whether one was running.
func (c *child) signal(sig os.Signal) bool {
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	s, ok := sig.(syscall.Signal)
	return ok && c.group(s)
}

func exitStatus(st *os.ProcessState) int {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

// signals is zkr's answer to SIGINT, SIGTERM and SIGHUP: the first one
// cancels ctx, so whatever zkr waits for ends and cleans up, and every one
// is forwarded to the COMMAND if one runs.
type signals struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	ch     chan os.Signal
	quit   chan struct{}
	done   chan struct{}
	child  *child

	mu        sync.Mutex
	first     os.Signal
	forwarded bool // the first signal reached a running COMMAND
}

// watchSignals starts catching signals for c (nil: no COMMAND). Call stop
// when done.
func watchSignals(c *child) *signals {
	s := &signals{ch: make(chan os.Signal, 4), quit: make(chan struct{}), done: make(chan struct{}), child: c}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	signal.Notify(s.ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go s.loop()
	return s
}

func (s *signals) loop() {
	defer close(s.done)
	for {
		select {
		case sig := <-s.ch:
			forwarded := s.child != nil && s.child.signal(sig)
			s.mu.Lock()
			if s.first == nil {
				s.first, s.forwarded = sig, forwarded
			}
			s.mu.Unlock()
			s.cancel(errStopping)
		case <-s.quit:
			return
		}
	}
}

// received returns the first signal (nil if none came) and whether it was
// forwarded to a running COMMAND.
func (s *signals) received() (os.Signal, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first, s.forwarded
}

// failed is zkr's status after err: 128+signal if a signal is why the
// call ended (it was cut short on purpose), else err is reported and 125.
func (s *signals) failed(log *logger, err error) int {
	if sig, _ := s.received(); sig != nil {
		return signalCode(sig)
	}
	log.printf("%v", err)
	return exitFailed
}

// stop restores the default handling and ends the goroutine.
func (s *signals) stop() {
	signal.Stop(s.ch)
	close(s.quit)
	<-s.done
	s.cancel(nil)
}
