package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// errStopping: a signal asked zkr to stop before COMMAND could start.
var errStopping = errors.New("stopping on a signal")

// child is the COMMAND zkr supervises: at most one runs at a time, through
// a supervisor process (see supervisor.go). Signals reach it through signal
// (from any goroutine); losing the hold stops it.
type child struct {
	argv    []string
	grace   time.Duration
	timeout time.Duration // the session timeout the server negotiated
	log     *logger

	mu       sync.Mutex
	ctl      io.Writer // the running supervisor's control pipe
	stopping bool      // a signal came: no COMMAND starts any more
}

// held is what child.run needs of a hold.
type held struct {
	done   <-chan struct{} // closed when the hold is no longer trusted
	why    func() error    // why it is not
	verify func() error    // a fresh round trip that finds the hold intact
}

// outcome is how one run of COMMAND ended.
type outcome struct {
	code int   // exit status, 128+S when signal S killed it
	lost error // why the hold ended while COMMAND ran; nil if it did not
}

// watchdog is how long the supervisor goes on without a heartbeat before it
// stops COMMAND by itself: the slack between the last heartbeat (the hold
// trusted then) and the earliest grant elsewhere, less the grace and a
// margin. See graceBudget.
func (c *child) watchdog() time.Duration { return graceBudget(c.timeout) - c.grace }

// graceBudget is the time between the last moment zkr trusts a hold and the
// moment COMMAND must be dead: a hold is trusted until 2/3 of the session
// timeout pass with no reply from the server, and the server can grant the
// lock to another session a full timeout after it last heard from this
// one; that leaves a third, less a margin for scheduling.
func graceBudget(timeout time.Duration) time.Duration {
	margin := max(timeout/30, minMargin)
	return max(timeout/3-margin, 0)
}

// minMargin is graceBudget's least margin for scheduling.
const minMargin = 100 * time.Millisecond

// minBudget is the least graceBudget zkr accepts: the watchdog, at least
// half of it (maxGrace), then covers five heartbeats of 20 ms or more
// (zkr beats every fifth of the watchdog), and a zkr slow to be scheduled
// is not taken for a stopped one.
const minBudget = 200 * time.Millisecond

// minSessionTimeout is the shortest session timeout whose graceBudget is
// minBudget: timeout/3 less the least margin.
const minSessionTimeout = 3 * (minBudget + minMargin)

// maxGrace is the longest --grace that still kills COMMAND before anyone
// else can be granted: half the budget, the other half being the watchdog's
// patience with a silent zkr.
func maxGrace(timeout time.Duration) time.Duration {
	return (graceBudget(timeout) / 2).Truncate(time.Millisecond)
}

// run starts COMMAND with env added to zkr's own environment and waits for
// it. If the hold is lost first, COMMAND is stopped: SIGTERM to its whole
// tree, SIGKILL after the grace period. run refuses to start COMMAND after
// a signal (errStopping) or once the hold is lost, and checks the hold with
// a fresh round trip before it starts COMMAND and before it lets a stopped
// COMMAND go on.
func (c *child) run(env []string, h held) (outcome, error) {
	if err := c.check(h); err != nil {
		c.log.printf("hold lost before COMMAND could start: %v", err)
		return outcome{lost: err}, nil
	}
	self, err := os.Executable()
	if err != nil {
		return outcome{code: exitFailed}, fmt.Errorf("find zkr's own binary: %w", err)
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return outcome{code: exitFailed}, err
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return outcome{code: exitFailed}, err
	}
	// Job control: zkr runs on a terminal, in a job a shell can stop and
	// continue. Without it (cron, systemd, CI, script -c), a stopped
	// COMMAND does not stop zkr.
	pgrp, jobControl := terminalMode()
	jc := 0
	if jobControl {
		jc = 1
	}
	cmd := exec.Command(self, c.argv...)
	cmd.Env = append(commandEnv(env), fmt.Sprintf("%s=%d %d %d %d", supervisorEnv, c.grace, c.watchdog(), pgrp, jc))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{ctlR, evW} // fds 3 and 4
	// A process group of its own: what stops zkr's job must not stop the
	// supervisor, whose watchdog then ends COMMAND in time.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		ctlR.Close()
		ctlW.Close()
		evR.Close()
		evW.Close()
		return outcome{}, errStopping
	}
	err = cmd.Start()
	ctlR.Close()
	evW.Close()
	if err != nil {
		c.mu.Unlock()
		ctlW.Close()
		evR.Close()
		return outcome{code: exitFailed}, fmt.Errorf("start the supervisor: %w", err)
	}
	c.ctl = ctlW
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.ctl = nil
		c.mu.Unlock()
		ctlW.Close()
		evR.Close()
		_ = cmd.Wait()
	}()

	events := make(chan string)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(evR)
		for sc.Scan() {
			events <- sc.Text()
		}
	}()
	conts := make(chan os.Signal, 1)
	signal.Notify(conts, syscall.SIGCONT)
	defer signal.Stop(conts)
	beat := time.NewTicker(max(c.watchdog()/5, 10*time.Millisecond))
	defer beat.Stop()

	var out outcome
	lost := h.done
	stoppedAt := time.Time{} // when COMMAND stopped, while it is stopped under job control
	// paused: COMMAND stopped and zkr did not (no job control, or COMMAND
	// touched the terminal from the background); onTTY: by SIGTTIN or
	// SIGTTOU, so that it goes on once zkr can give it the terminal.
	paused, onTTY := false, false
	commandPid := 0
	foreground := func() bool {
		fg, err := tcgetpgrp(0)
		return err == nil && fg == syscall.Getpgrp()
	}
	// resume continues a stopped COMMAND, with the terminal if zkr's job
	// has it, unless err (the hold is not intact): then it has the tree
	// killed. The command first, the message after: in the background
	// under stty tostop, writing to the terminal stops zkr (SIGTTOU), and
	// what zkr decided must not wait for fg.
	resume := func(err error, why string) {
		if err != nil {
			out.lost = err
			lost = nil
			c.send(cmdKill)
			c.log.printf("hold lost while COMMAND was stopped (%v): COMMAND killed", err)
			return
		}
		where := "bg"
		if foreground() {
			where = "fg"
		}
		c.send(cmdResume + " " + where)
		c.log.infof("hold intact: COMMAND continues (%s, on %s)", where, why)
	}
	// resumePaused continues a paused COMMAND if a fresh answer from the
	// server shows the hold intact.
	resumePaused := func(why string) {
		paused, onTTY = false, false
		resume(c.check(h), why)
	}
	// resumeStopped continues COMMAND stopped under job control (zkr was
	// stopped too): whatever happened meanwhile, only if a fresh answer
	// from the server shows the hold intact, and COMMAND was not stopped
	// beyond the time zkr vouched for.
	resumeStopped := func(why string) {
		err := c.check(h)
		if err == nil && time.Since(stoppedAt) >= c.timeout*2/3 {
			err = fmt.Errorf("stopped for %v, 2/3 of the session timeout or more", time.Since(stoppedAt).Round(time.Millisecond))
		}
		stoppedAt = time.Time{}
		resume(err, why)
	}
	loseHold := func() {
		lost = nil
		if out.lost == nil {
			out.lost = h.why()
		}
		c.send(cmdLost) // the command first, the message after: see below
		c.log.printf("hold lost (%v): stopping COMMAND (SIGTERM, SIGKILL after %v)", out.lost, c.grace)
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				// Killed, most likely: COMMAND died with it (parent-death
				// signal); what it started in its process group goes too,
				// before the hold is released.
				if commandPid > 0 {
					_ = syscall.Kill(-commandPid, syscall.SIGKILL)
				}
				out.code = exitFailed
				return out, errors.New("the supervisor ended without a word: COMMAND was killed")
			}
			verb, arg, _ := strings.Cut(ev, " ")
			switch verb {
			case evWarn:
				c.log.printf("%s", arg)
			case evStarted:
				commandPid, _ = strconv.Atoi(arg)
			case evFailed:
				code, msg, _ := strings.Cut(arg, " ")
				out.code, _ = strconv.Atoi(code)
				return out, errors.New(msg)
			case evExited:
				out.code, _ = strconv.Atoi(arg)
				return out, nil
			case evWatchdog:
				why := errors.New("zkr stopped answering its supervisor")
				if arg == "stopped" {
					why = fmt.Errorf("stopped for 2/3 of the session timeout (%v) or more", c.timeout*2/3)
					c.log.printf("COMMAND was %v: the supervisor killed it", why)
				} else {
					c.log.printf("the supervisor heard nothing from zkr for %v: it is stopping COMMAND", c.watchdog())
				}
				if out.lost == nil {
					out.lost = why
				}
			case evWake:
				// A signal went to a stopped COMMAND: it goes on to act on
				// it, under a hold checked afresh.
				switch {
				case out.lost != nil:
					c.send(cmdKill)
				case !stoppedAt.IsZero():
					resumeStopped("a signal")
				case paused:
					resumePaused("a signal")
				}
			case evPaused:
				if out.lost != nil {
					c.send(cmdKill) // lost already: a stopped COMMAND never runs again
					continue
				}
				n, _ := strconv.Atoi(arg)
				paused, onTTY = true, syscall.Signal(n) == syscall.SIGTTIN || syscall.Signal(n) == syscall.SIGTTOU
				if onTTY && foreground() {
					resumePaused("it needs the terminal")
					continue
				}
				if onTTY {
					c.log.infof("COMMAND stopped on the terminal in the background; zkr keeps the hold, and fg continues it")
				} else if pgrp >= 0 {
					// On a terminal no shell can fg zkr from (script -c,
					// ssh -t): say what is left to do, or Ctrl-Z looks
					// like a hang.
					c.log.printf("COMMAND stopped, and nothing here can continue zkr's job (no job control): zkr keeps the hold; Ctrl-C ends COMMAND")
				} else {
					c.log.infof("COMMAND stopped; zkr keeps the hold (no job control)")
				}
			case evStopped:
				if out.lost != nil {
					c.send(cmdKill) // lost already: a stopped COMMAND never runs again
					continue
				}
				// Ctrl-Z: COMMAND is stopped and the terminal is ours again.
				// The job stops with COMMAND, as the shell expects; fg or bg
				// continue zkr (SIGCONT), which decides whether COMMAND may.
				// A stopped zkr keeps no session alive: a fresh round trip
				// first, after which the server grants the hold elsewhere
				// a full session timeout later at the earliest, and the
				// supervisor kills the stopped tree at 2/3 of it, when fg
				// would kill it anyway, rather than leave it for a foreign
				// SIGCONT to wake beside the next holder.
				stoppedAt = time.Now()
				if err := c.check(h); err != nil {
					stoppedAt = time.Time{}
					out.lost = err
					lost = nil
					c.send(cmdKill)
					c.log.printf("hold lost as COMMAND stopped (%v): COMMAND killed", err)
					continue
				}
				c.send(fmt.Sprintf("%s %d", cmdStoppedFor, int64(time.Until(stoppedAt.Add(c.timeout*2/3)))))
				c.log.infof("COMMAND stopped: stopping zkr too")
				_ = syscall.Kill(0, syscall.SIGTSTP)
			}
		case <-conts:
			if stoppedAt.IsZero() {
				// fg: COMMAND gets the terminal, and goes on if it stopped
				// on reading it.
				switch {
				case paused && onTTY && foreground():
					resumePaused("fg")
				case !paused && lost != nil && foreground():
					// The terminal only: a stop the supervisor made and zkr
					// has not read yet must not be continued unchecked.
					c.send(cmdForeground)
				}
				continue
			}
			resumeStopped("SIGCONT")
		case <-lost:
			loseHold()
		case <-beat.C:
			if lost == nil || !stoppedAt.IsZero() {
				continue
			}
			if paused && onTTY && foreground() {
				// fg without a SIGCONT, which a shell need not send to a
				// running job.
				resumePaused("fg")
				if lost == nil {
					continue // found lost: no heartbeat for it
				}
			}
			// select picks at random among ready cases: the hold may have
			// ended while this tick waited. No heartbeat for a lost hold.
			select {
			case <-lost:
				loseHold()
			default:
				c.send(cmdAlive)
			}
		}
	}
}

// commandEnv is COMMAND's environment: zkr's, less the credentials zkr was
// given (COMMAND has no business with them), plus extra.
func commandEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ZKR_AUTH=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// check is the hold as a fresh round trip finds it: nil if trusted.
func (c *child) check(h held) error {
	select {
	case <-h.done:
		return h.why()
	default:
	}
	if err := h.verify(); err != nil {
		return err
	}
	select {
	case <-h.done:
		return h.why()
	default:
		return nil
	}
}

// send writes one command to the running supervisor, if any.
func (c *child) send(command string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctl == nil {
		return false
	}
	_, err := io.WriteString(c.ctl, command+"\n")
	return err == nil
}

// signal passes a signal zkr received on to the running COMMAND's process
// group, and keeps any COMMAND from starting afterwards. It reports whether
// one was running.
func (c *child) signal(sig os.Signal) bool {
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	s, ok := sig.(syscall.Signal)
	return ok && c.send(fmt.Sprintf("%s %d", cmdSignal, int(s)))
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
