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
	sup, err := c.startSupervisor(env)
	if err != nil {
		return outcome{code: exitFailed}, err
	}
	if sup == nil {
		return outcome{}, errStopping
	}
	defer sup.close(c)
	r := &commandRun{c: c, h: h, pgrp: sup.pgrp}
	return r.follow(sup.events)
}

// supervised is a running supervisor, from zkr's side.
type supervised struct {
	cmd    *exec.Cmd
	ctl    *os.File // zkr -> supervisor
	evR    *os.File // supervisor -> zkr
	events chan string
	pgrp   int // zkr's job's process group on a terminal, else -1
}

// startSupervisor starts the supervisor of COMMAND, with env added to
// COMMAND's environment. It returns nil, and starts nothing, if a signal
// came first.
func (c *child) startSupervisor(env []string) (*supervised, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find zkr's own binary: %w", err)
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, err
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
		return nil, nil
	}
	err = cmd.Start()
	ctlR.Close()
	evW.Close()
	if err != nil {
		c.mu.Unlock()
		ctlW.Close()
		evR.Close()
		return nil, fmt.Errorf("start the supervisor: %w", err)
	}
	c.ctl = ctlW
	c.mu.Unlock()
	s := &supervised{cmd: cmd, ctl: ctlW, evR: evR, events: make(chan string), pgrp: pgrp}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(evR)
		for sc.Scan() {
			s.events <- sc.Text()
		}
	}()
	return s, nil
}

// close ends zkr's side of the pipes and reaps the supervisor.
func (s *supervised) close(c *child) {
	c.mu.Lock()
	c.ctl = nil
	c.mu.Unlock()
	s.ctl.Close()
	s.evR.Close()
	_ = s.cmd.Wait()
}

// runState is what zkr knows of COMMAND while it runs under a hold.
type runState int

const (
	// running: COMMAND runs and the hold is trusted. Every beat, zkr
	// sends the supervisor a heartbeat.
	running runState = iota
	// paused: COMMAND stopped and zkr did not (no job control: kill -STOP
	// under cron, or Ctrl-Z where no shell can continue zkr's job). zkr
	// keeps the hold and its heartbeats; whoever stopped COMMAND continues
	// it, or zkr does, after a fresh check of the hold, when it passes
	// COMMAND a signal.
	paused
	// waitingForTerminal: COMMAND, in the background, stopped on the
	// terminal (SIGTTIN, SIGTTOU). As paused, and zkr continues it, after a
	// fresh check of the hold, once zkr's job has the terminal (fg).
	waitingForTerminal
	// stopped: Ctrl-Z under job control. COMMAND's tree is stopped, and zkr
	// stopped itself too, so nothing keeps its session alive: SIGCONT (fg,
	// bg) or a signal continues COMMAND only after a fresh check of the
	// hold, and only within 2/3 of the session timeout.
	stopped
	// lost: the hold is lost, or in doubt (the supervisor's watchdog
	// fired). The supervisor ends COMMAND, a stopped COMMAND never runs
	// again, and zkr waits for the supervisor's report.
	lost
)

// commandRun is one run of COMMAND under a hold, from zkr's side of the
// supervisor: a state machine fed by the supervisor's events, the hold's
// loss signal, SIGCONT and a heartbeat tick, one method each.
type commandRun struct {
	c    *child
	h    held
	pgrp int // zkr's job's process group on a terminal, else -1

	state      runState
	stoppedAt  time.Time // when COMMAND stopped, in state stopped
	commandPid int
	out        outcome
	ended      bool  // the supervisor has reported COMMAND's end
	err        error // why COMMAND could not run, or the supervisor failed
}

// follow runs the state machine until the supervisor reports the end.
func (r *commandRun) follow(events <-chan string) (outcome, error) {
	conts := make(chan os.Signal, 1)
	signal.Notify(conts, syscall.SIGCONT)
	defer signal.Stop(conts)
	beat := time.NewTicker(max(r.c.watchdog()/5, 10*time.Millisecond))
	defer beat.Stop()
	for !r.ended {
		select {
		case ev, ok := <-events:
			if !ok {
				r.onSupervisorGone()
				break
			}
			r.onEvent(ev)
		case <-conts:
			r.onContinued()
		case <-r.lossSignal():
			r.onLoss()
		case <-beat.C:
			r.onBeat()
		}
	}
	return r.out, r.err
}

// lossSignal is the hold's loss signal, until the hold is lost: then nil,
// which a select never picks.
func (r *commandRun) lossSignal() <-chan struct{} {
	if r.state == lost {
		return nil
	}
	return r.h.done
}

// end records that COMMAND has ended, and err (nil if it ran).
func (r *commandRun) end(code int, err error) {
	r.out.code, r.err, r.ended = code, err, true
}

// onEvent dispatches one line from the supervisor.
func (r *commandRun) onEvent(ev string) {
	verb, arg, _ := strings.Cut(ev, " ")
	switch verb {
	case evWarn:
		r.c.log.printf("%s", arg)
	case evStarted:
		r.commandPid, _ = strconv.Atoi(arg)
	case evFailed:
		code, msg, _ := strings.Cut(arg, " ")
		n, _ := strconv.Atoi(code)
		r.end(n, errors.New(msg))
	case evExited:
		n, _ := strconv.Atoi(arg)
		r.end(n, nil)
	case evWatchdog:
		r.onWatchdog(arg == "stopped")
	case evWake:
		r.onWake()
	case evPaused:
		n, _ := strconv.Atoi(arg)
		r.onPaused(syscall.Signal(n))
	case evStopped:
		r.onStopped()
	}
}

// onSupervisorGone: the events pipe closed without a report. The
// supervisor was killed, most likely: COMMAND died with it (parent-death
// signal); what it started in its process group goes too, before the hold
// is released.
func (r *commandRun) onSupervisorGone() {
	if r.commandPid > 0 {
		_ = syscall.Kill(-r.commandPid, syscall.SIGKILL)
	}
	r.end(exitFailed, errors.New("the supervisor ended without a word: COMMAND was killed"))
}

// onWatchdog: the supervisor heard no heartbeat in time and is ending
// COMMAND by itself (killed it, if it was stopped).
func (r *commandRun) onWatchdog(wasStopped bool) {
	why := errors.New("zkr stopped answering its supervisor")
	if wasStopped {
		why = fmt.Errorf("stopped for 2/3 of the session timeout (%v) or more", r.c.timeout*2/3)
		r.c.log.printf("COMMAND was %v: the supervisor killed it", why)
	} else {
		r.c.log.printf("the supervisor heard nothing from zkr for %v: it is stopping COMMAND", r.c.watchdog())
	}
	if r.out.lost == nil {
		r.out.lost = why
	}
	r.state = lost
}

// onWake: a signal went to a stopped COMMAND. It goes on to act on it,
// under a hold checked afresh.
func (r *commandRun) onWake() {
	switch r.state {
	case lost:
		r.c.send(cmdKill)
	case stopped:
		r.resumeStopped("a signal")
	case paused, waitingForTerminal:
		r.resumePaused("a signal")
	}
}

// onPaused: COMMAND stopped on sig and zkr goes on (no job control, or
// COMMAND touched the terminal from the background).
func (r *commandRun) onPaused(sig syscall.Signal) {
	if r.state == lost {
		r.c.send(cmdKill) // lost already: a stopped COMMAND never runs again
		return
	}
	if sig != syscall.SIGTTIN && sig != syscall.SIGTTOU {
		r.state = paused
		if r.pgrp >= 0 {
			// On a terminal no shell can fg zkr from (script -c, ssh -t):
			// say what is left to do, or Ctrl-Z looks like a hang.
			r.c.log.printf("COMMAND stopped, and nothing here can continue zkr's job (no job control): zkr keeps the hold; Ctrl-C ends COMMAND")
		} else {
			r.c.log.infof("COMMAND stopped; zkr keeps the hold (no job control)")
		}
		return
	}
	r.state = waitingForTerminal
	if foreground() {
		r.resumePaused("it needs the terminal")
		return
	}
	r.c.log.infof("COMMAND stopped on the terminal in the background; zkr keeps the hold, and fg continues it")
}

// onStopped: Ctrl-Z. COMMAND is stopped and the terminal is zkr's again.
// The job stops with COMMAND, as the shell expects; fg or bg continue zkr
// (SIGCONT), which decides whether COMMAND may. A stopped zkr keeps no
// session alive: a fresh round trip first, after which the server grants
// the hold elsewhere a full session timeout later at the earliest, and the
// supervisor kills the stopped tree at 2/3 of it, when fg would kill it
// anyway, rather than leave it for a foreign SIGCONT to wake beside the
// next holder.
func (r *commandRun) onStopped() {
	if r.state == lost {
		r.c.send(cmdKill) // lost already: a stopped COMMAND never runs again
		return
	}
	r.stoppedAt = time.Now()
	if err := r.c.check(r.h); err != nil {
		r.state, r.out.lost = lost, err
		r.c.send(cmdKill)
		r.c.log.printf("hold lost as COMMAND stopped (%v): COMMAND killed", err)
		return
	}
	r.state = stopped
	r.c.send(fmt.Sprintf("%s %d", cmdStoppedFor, int64(time.Until(r.stoppedAt.Add(r.c.timeout*2/3)))))
	r.c.log.infof("COMMAND stopped: stopping zkr too")
	_ = syscall.Kill(0, syscall.SIGTSTP)
}

// onContinued: SIGCONT. After Ctrl-Z, fg or bg: COMMAND goes on if the
// hold is intact. Otherwise fg: COMMAND gets the terminal, and goes on if
// it stopped on reading it.
func (r *commandRun) onContinued() {
	switch r.state {
	case stopped:
		r.resumeStopped("SIGCONT")
	case waitingForTerminal:
		if foreground() {
			r.resumePaused("fg")
		}
	case running:
		if foreground() {
			// The terminal only: a stop the supervisor made and zkr has
			// not read yet must not be continued unchecked.
			r.c.send(cmdForeground)
		}
	}
}

// onLoss: the hold's loss signal fired.
func (r *commandRun) onLoss() {
	r.state = lost
	if r.out.lost == nil {
		r.out.lost = r.h.why()
	}
	r.c.send(cmdLost) // the command first, the message after: see resume
	stampf(r.c.log, "hold lost (%v): stopping COMMAND (SIGTERM, SIGKILL after %v)", r.out.lost, r.c.grace)
}

// onBeat: the heartbeat tick, while COMMAND runs or is paused. A shell
// need not send SIGCONT to a running job on fg: a COMMAND waiting for the
// terminal is continued once zkr's job has it.
func (r *commandRun) onBeat() {
	switch r.state {
	case lost, stopped:
		return
	case waitingForTerminal:
		if foreground() {
			r.resumePaused("fg")
			if r.state == lost {
				return // found lost: no heartbeat for it
			}
		}
	}
	// select picks at random among ready cases: the hold may have ended
	// while this tick waited. No heartbeat for a lost hold.
	select {
	case <-r.h.done:
		r.onLoss()
	default:
		r.c.send(cmdAlive)
	}
}

// resumePaused continues a paused COMMAND if a fresh answer from the
// server shows the hold intact.
func (r *commandRun) resumePaused(why string) {
	r.resume(r.c.check(r.h), why)
}

// resumeStopped continues COMMAND stopped under job control (zkr was
// stopped too): whatever happened meanwhile, only if a fresh answer from
// the server shows the hold intact, and COMMAND was not stopped beyond the
// time zkr vouched for.
func (r *commandRun) resumeStopped(why string) {
	err := r.c.check(r.h)
	if err == nil && time.Since(r.stoppedAt) >= r.c.timeout*2/3 {
		err = fmt.Errorf("stopped for %v, 2/3 of the session timeout or more", time.Since(r.stoppedAt).Round(time.Millisecond))
	}
	r.stoppedAt = time.Time{}
	r.resume(err, why)
}

// resume continues a stopped COMMAND, with the terminal if zkr's job has
// it, unless err (the hold is not intact): then it has the tree killed.
// The command first, the message after: in the background under stty
// tostop, writing to the terminal stops zkr (SIGTTOU), and what zkr
// decided must not wait for fg.
func (r *commandRun) resume(err error, why string) {
	if err != nil {
		r.state, r.out.lost = lost, err
		r.c.send(cmdKill)
		r.c.log.printf("hold lost while COMMAND was stopped (%v): COMMAND killed", err)
		return
	}
	r.state = running
	where := "bg"
	if foreground() {
		where = "fg"
	}
	r.c.send(cmdResume + " " + where)
	r.c.log.infof("hold intact: COMMAND continues (%s, on %s)", where, why)
}

// foreground reports whether zkr's job is the terminal's foreground job.
func foreground() bool {
	fg, err := tcgetpgrp(0)
	return err == nil && fg == syscall.Getpgrp()
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

// signals is zkr's answer to SIGINT, SIGTERM, SIGQUIT and SIGHUP: the
// first one cancels ctx, so whatever zkr waits for ends and cleans up, and
// every one is forwarded to the COMMAND if one runs. SIGQUIT (Ctrl-\) is
// one of them rather than Go's stack dump (exit 2), which left zkr's nodes
// to the session timeout.
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
	signal.Notify(s.ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP)
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
