package main

// The supervisor: zkr does not start COMMAND itself but a copy of itself
// that starts COMMAND and answers for its whole process tree. It exists for
// what zkr cannot do from where it stands:
//
//   - Outlive zkr. If zkr is killed (kill -9, the OOM killer), the kernel's
//     parent-death signal reaches only zkr's direct child. The supervisor
//     learns of zkr's death from the control pipe (EOF), and as the child
//     subreaper it inherits every orphan of COMMAND's tree, setsid ones
//     included: it kills them all before it exits.
//   - Keep holding its promise while zkr cannot run. zkr sends it a
//     heartbeat while the hold is trusted; if the heartbeats stop (zkr
//     stopped or stuck) it stops COMMAND on its own, within the slack
//     between the last heartbeat and the earliest grant elsewhere.
//   - Job control. It is COMMAND's parent, so it sees COMMAND stop (Ctrl-Z)
//     and hands the terminal back, and it resumes COMMAND only when zkr,
//     having checked the hold again, says so.
//
// It runs in a process group of its own, and is named zkr-supervisor, so
// that nothing aimed at zkr stops or kills it with zkr: a shell stopping
// zkr's job (kill -STOP %1, SIGTTOU under stty tostop) freezes zkr alone,
// and the watchdog then ends COMMAND in time; killall -9 zkr kills zkr
// alone, and the supervisor then ends the tree.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// supervisorEnv marks a zkr started as a supervisor; its value is
// "GRACE WATCHDOG PGRP JOBCONTROL": durations in nanoseconds; the process
// group of zkr's job when stdin is zkr's controlling terminal, else -1;
// and 1 under job control (see terminalMode), else 0. The supervisor
// removes it before it starts COMMAND.
const supervisorEnv = "ZKR_INTERNAL_SUPERVISE"

// The supervisor's pipes, as its file descriptors.
const (
	controlFD = 3 // zkr -> supervisor: commands, one a line
	eventsFD  = 4 // supervisor -> zkr: events, one a line
)

// Commands, zkr to supervisor.
const (
	cmdAlive      = "alive"       // the hold is trusted: the watchdog starts over
	cmdLost       = "lost"        // the hold is lost: SIGTERM the tree, SIGKILL after grace
	cmdKill       = "kill"        // SIGKILL the tree now (a stopped COMMAND must not run again)
	cmdSignal     = "signal"      // "signal N": pass signal N to COMMAND's process group
	cmdResume     = "resume"      // "resume fg" or "resume bg": continue a stopped COMMAND (only after a fresh check of the hold); with fg, COMMAND gets the terminal if zkr's job has it
	cmdForeground = "foreground"  // COMMAND gets the terminal if zkr's job has it; nothing stopped is continued
	cmdStoppedFor = "stopped-for" // "stopped-for NANOS": under Ctrl-Z the hold is vouched for that long, then the tree is killed
)

// Events, supervisor to zkr.
const (
	evStarted  = "started"  // "started PID"
	evStopped  = "stopped"  // COMMAND stopped under job control (Ctrl-Z): the terminal is zkr's again, and zkr stops too
	evPaused   = "paused"   // "paused SIGNAL": COMMAND stopped, zkr goes on (no job control, or SIGTTIN/SIGTTOU): it resumes COMMAND or not
	evWake     = "wake"     // a signal was passed to a stopped COMMAND: zkr checks the hold and resumes COMMAND, or has it killed
	evExited   = "exited"   // "exited STATUS": COMMAND and everything it started are gone
	evFailed   = "failed"   // "failed STATUS MESSAGE": COMMAND could not be started
	evWatchdog = "watchdog" // the heartbeats stopped: COMMAND is being stopped ("watchdog stopped": a stopped COMMAND was killed)
	evWarn     = "warn"     // "warn MESSAGE": for zkr to log (the supervisor never writes to the terminal)
)

// supervisorName is the supervisor's process name (comm), which killall
// and top show: not zkr's own, so that killall -9 zkr spares it.
const supervisorName = "zkr-supervisor"

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

// supervise is the supervisor's main: it runs argv and reports on it.
func supervise(spec string, argv []string) int {
	os.Unsetenv(supervisorEnv)
	var grace, watchdog time.Duration
	var shellPgrp, jobControl int
	if _, err := fmt.Sscan(spec, &grace, &watchdog, &shellPgrp, &jobControl); err != nil || len(argv) == 0 {
		fmt.Fprintf(os.Stderr, "zkr: %s is for zkr's own use\n", supervisorEnv)
		return exitUsage
	}
	ctl := os.NewFile(controlFD, "control")
	events := os.NewFile(eventsFD, "events")
	if ctl == nil || events == nil {
		fmt.Fprintf(os.Stderr, "zkr: %s is for zkr's own use\n", supervisorEnv)
		return exitUsage
	}
	// Not for COMMAND: with the control pipe it could eat zkr's commands,
	// with the events pipe forge "exited 0", and either held by a
	// descendant would hide the supervisor's end from zkr.
	syscall.CloseOnExec(controlFD)
	syscall.CloseOnExec(eventsFD)
	// The thread group leader's name is the process's.
	_ = os.WriteFile(fmt.Sprintf("/proc/self/task/%d/comm", os.Getpid()), []byte(supervisorName), 0)
	s := &supervisor{grace: grace, watchdog: watchdog, events: events, tty: -1, shellPgrp: shellPgrp, jobControl: jobControl == 1}
	if shellPgrp >= 0 {
		s.tty = 0
	}
	return s.run(argv, ctl)
}

// treeState is the supervisor's view of COMMAND's tree under job control.
type treeState int

const (
	// treeRunning: COMMAND runs. The watchdog starts over at each of zkr's
	// heartbeats.
	treeRunning treeState = iota
	// treePaused: without job control (cron, systemd, CI, script -c), or
	// on reading the terminal from the background (SIGTTIN, SIGTTOU),
	// COMMAND stopped and nothing else changes: zkr goes on watching the
	// hold, the watchdog runs, and whoever stopped COMMAND continues it,
	// or zkr does, after checking the hold, once it can give COMMAND the
	// terminal or passes it a signal.
	treePaused
	// treeStopped: under job control, COMMAND stopped (Ctrl-Z) with its
	// whole tree, until zkr, having checked the hold, resumes it. zkr is
	// stopped too and sends no heartbeat: the watchdog kills the tree
	// once the time zkr vouched for has passed.
	treeStopped
)

type supervisor struct {
	grace, watchdog time.Duration
	events          io.Writer
	tty             int   // the terminal COMMAND may get, or -1: no terminal
	shellPgrp       int   // the process group of zkr's job: the terminal goes back to it
	jobControl      bool  // a shell can stop and continue zkr's job (see terminalMode)
	pid             int   // COMMAND, the leader of its process group
	stoppedPids     []int // what stopTree stopped, to be continued on resume
	seenPids        []int // every process of the stopped tree

	state         treeState
	status        int  // COMMAND's exit status once it has exited, else -1
	ending        bool // COMMAND has exited or is being stopped: the tree goes
	watchdogTimer *time.Timer
	watchdogC     <-chan time.Time // the watchdog, while armed
	graceC        <-chan time.Time // the end of --grace, once the tree had SIGTERM
}

type waited struct {
	pid    int
	status syscall.WaitStatus
}

func (s *supervisor) emit(format string, args ...any) {
	_, _ = fmt.Fprintf(s.events, format+"\n", args...)
}

func (s *supervisor) run(argv []string, ctl io.Reader) int {
	// zkr forwards the signals that matter to COMMAND; those that reach the
	// supervisor because it shares zkr's process group are caught and
	// dropped. Caught, not ignored: an ignored signal stays ignored across
	// exec, and COMMAND must get the default.
	drop := make(chan os.Signal, 8)
	signal.Notify(drop, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for range drop {
		}
	}()
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		s.emit("%s cannot become the child subreaper: %v", evWarn, errno)
	}
	// COMMAND's parent-death signal follows the thread that started it.
	runtime.LockOSThread()

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if s.zkrHasTerminal() {
		// COMMAND is the terminal's foreground job: it reads the terminal,
		// and Ctrl-C and Ctrl-Z reach it (and not zkr). Go's fork makes
		// the terminal's foreground change with signals blocked, so it
		// works from the supervisor's background process group. zkr in
		// the background (&) leaves COMMAND there too, until fg.
		cmd.SysProcAttr.Foreground = true
		cmd.SysProcAttr.Ctty = s.tty
	}
	if err := cmd.Start(); err != nil {
		s.emit("%s %d %v", evFailed, commandError(err), err)
		return 0
	}
	s.pid = cmd.Process.Pid
	s.emit("%s %d", evStarted, s.pid)

	commands := make(chan string)
	go func() {
		defer close(commands)
		sc := bufio.NewScanner(ctl)
		for sc.Scan() {
			commands <- sc.Text()
		}
	}()
	reaped := make(chan waited, 16)
	go reap(reaped)

	s.status = -1
	s.armWatchdog(s.watchdog)
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case c, ok := <-commands:
			if !ok {
				s.onZkrGone()
				return 0
			}
			s.onCommand(c)
		case w := <-reaped:
			s.onReaped(w)
		case <-s.watchdogC:
			s.onWatchdog()
		case <-s.graceC:
			s.onGraceOver()
		case <-poll.C:
			s.onPoll()
		}
		if s.status >= 0 && s.treeEmpty() {
			s.emit("%s %d", evExited, s.status)
			return 0
		}
	}
}

// armWatchdog starts the watchdog over, to fire after d.
func (s *supervisor) armWatchdog(d time.Duration) {
	if s.watchdogTimer != nil {
		s.watchdogTimer.Stop()
	}
	s.watchdogTimer = time.NewTimer(d)
	s.watchdogC = s.watchdogTimer.C
}

// endTree sends the tree SIGTERM, and SIGKILL after the grace, once.
func (s *supervisor) endTree() {
	if !s.ending {
		s.ending = true
		s.signalTree(syscall.SIGTERM)
		s.graceC = time.After(s.grace)
	}
}

// onZkrGone: the control pipe closed. zkr is gone: nobody watches the hold
// for COMMAND any more.
func (s *supervisor) onZkrGone() {
	s.killTree()
}

// onCommand dispatches one line from zkr.
func (s *supervisor) onCommand(c string) {
	verb, arg, _ := strings.Cut(c, " ")
	switch verb {
	case cmdAlive:
		s.onAlive()
	case cmdLost:
		s.onLost()
	case cmdKill:
		s.killTree()
	case cmdStoppedFor:
		if d, err := strconv.ParseInt(arg, 10, 64); err == nil {
			s.onStoppedFor(time.Duration(d))
		}
	case cmdSignal:
		if n, err := strconv.Atoi(arg); err == nil {
			s.onSignal(syscall.Signal(n))
		}
	case cmdForeground:
		s.onForeground()
	case cmdResume:
		s.onResume(arg == "fg")
	}
}

// onAlive: a heartbeat; the hold is trusted.
func (s *supervisor) onAlive() {
	if s.state != treeStopped {
		s.armWatchdog(s.watchdog)
	}
}

// onLost: the hold is lost.
func (s *supervisor) onLost() {
	s.watchdogC = nil
	if s.state != treeRunning {
		// A stopped COMMAND never runs again once the hold is lost, not
		// even to act on SIGTERM.
		s.killTree()
		return
	}
	s.endTree()
}

// onStoppedFor: under Ctrl-Z, zkr vouches for the hold for d more.
func (s *supervisor) onStoppedFor(d time.Duration) {
	if s.state == treeStopped {
		s.armWatchdog(d)
	}
}

// onSignal passes a signal zkr received on to COMMAND's process group.
func (s *supervisor) onSignal(sig syscall.Signal) {
	_ = syscall.Kill(-s.pid, sig)
	if s.state != treeRunning {
		// A stopped COMMAND would never act on it, and zkr would wait for
		// ever: zkr checks the hold and resumes it, or has it killed.
		s.emit("%s", evWake)
	}
}

// onForeground gives COMMAND the terminal, and only that: what the
// supervisor has stopped (and zkr may not have heard of yet) goes on only
// by a resume, which follows a check of the hold.
func (s *supervisor) onForeground() {
	if s.zkrHasTerminal() {
		setForeground(s.tty, s.pid)
	}
}

// onResume continues a stopped COMMAND (zkr checked the hold), with the
// terminal if fg and zkr's job has it.
func (s *supervisor) onResume(fg bool) {
	if fg && s.zkrHasTerminal() {
		setForeground(s.tty, s.pid)
	}
	switch s.state {
	case treeStopped:
		s.state = treeRunning
		s.resumeTree()
		s.armWatchdog(s.watchdog)
	case treePaused:
		s.state = treeRunning
		_ = syscall.Kill(-s.pid, syscall.SIGCONT)
	}
}

// onReaped: wait4 reported a child of the supervisor.
func (s *supervisor) onReaped(w waited) {
	switch {
	case w.status.Continued():
		s.onContinued(w.pid)
	case w.pid != s.pid:
		// an orphan of COMMAND's tree, reaped
	case w.status.Stopped():
		s.onCommandStopped(w.status.StopSignal())
	case w.status.Exited() || w.status.Signaled():
		status := w.status.ExitStatus()
		if w.status.Signaled() {
			status = 128 + int(w.status.Signal())
		}
		s.onCommandExited(status)
	}
}

// onContinued: a child of the supervisor was continued.
func (s *supervisor) onContinued(pid int) {
	switch {
	case s.state == treeStopped:
		// A SIGCONT zkr did not send (zkr's resume leaves treeStopped
		// first): kill -CONT, a debugger. zkr, stopped too, vouches for
		// nothing: the tree stops again before it goes on unsupervised,
		// and the watchdog kills it once the budget has passed.
		s.stopTree()
	case pid == s.pid:
		s.state = treeRunning
	}
}

// onCommandStopped: COMMAND stopped on sig.
func (s *supervisor) onCommandStopped(sig syscall.Signal) {
	if s.state == treeStopped {
		return // stopped again by stopTree: zkr knows already
	}
	if st := state(s.pid); st != 'T' && st != 't' {
		return // continued since: a stale report
	}
	if !s.jobControl || sig == syscall.SIGTTIN || sig == syscall.SIGTTOU {
		// Nobody can stop and continue zkr's job (no terminal, or none a
		// shell controls), or COMMAND, in the background, touched the
		// terminal: zkr is not stopped, and on a terminal it gets the
		// terminal back, so that Ctrl-C reaches it.
		s.state = treePaused
		s.giveTerminalBack()
		s.emit("%s %d", evPaused, int(sig))
		return
	}
	s.state = treeStopped
	// The whole tree stops, not only COMMAND's process group: nothing of
	// it may run while the hold lapses. zkr checks the hold before any of
	// it goes on; meanwhile the watchdog runs on: zkr, stopped too, sends
	// no heartbeat, and once the time zkr vouched for (cmdStoppedFor; the
	// last heartbeat's until then) has passed, the tree is killed, not
	// left for a foreign SIGCONT to wake.
	s.stopTree()
	s.giveTerminalBack()
	s.emit("%s", evStopped)
}

// onCommandExited: COMMAND exited with status.
func (s *supervisor) onCommandExited(status int) {
	s.status = status
	s.giveTerminalBack()
	// What COMMAND started must not run on after it: the hold is released
	// once the supervisor reports. Under Ctrl-Z, zkr is stopped and the
	// hold may be gone already: the stopped tree never runs again, not
	// even to act on SIGTERM (as for cmdLost).
	if s.state == treeStopped {
		s.killTree()
	} else {
		s.endTree()
	}
}

// onWatchdog: no heartbeat came in time. The hold is in doubt.
func (s *supervisor) onWatchdog() {
	s.watchdogC = nil
	if s.state == treeStopped {
		s.emit("%s stopped", evWatchdog)
	} else {
		s.emit("%s", evWatchdog)
	}
	if s.state != treeRunning {
		// A stopped COMMAND never runs again once the hold is in doubt,
		// not even to act on SIGTERM.
		s.killTree()
		return
	}
	s.endTree()
}

// onGraceOver: the grace after SIGTERM has passed.
func (s *supervisor) onGraceOver() {
	s.graceC = nil
	s.killTree()
}

// onPoll: polling for the end of the tree once COMMAND is gone (orphans
// are reaped as they come, but one may linger unreaped; the run loop
// checks after every event). While stopped, polling for a process of the
// tree that a SIGCONT not zkr's continued: the supervisor hears only of
// its own children's.
func (s *supervisor) onPoll() {
	if s.state == treeStopped && s.treeRuns() {
		s.stopTree()
	}
}

// reap waits for every child, COMMAND's stops and continues included,
// until none is left for good.
func reap(out chan<- waited) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WUNTRACED|syscall.WCONTINUED, nil)
		switch {
		case err == nil:
			out <- waited{pid, ws}
		case errors.Is(err, syscall.EINTR):
		case errors.Is(err, syscall.ECHILD):
			time.Sleep(10 * time.Millisecond) // an orphan may still be reparented to us
		default:
			return
		}
	}
}

// stopTree stops every process of the tree that runs: Ctrl-Z stops only
// COMMAND's process group, and a descendant in a session of its own, or
// one that handles SIGTSTP, would run on. It looks again until a pass
// finds nothing new, for what was forked meanwhile. It remembers what it
// stopped (stoppedPids, for resumeTree) and every process of the tree
// (seenPids, for treeRuns).
func (s *supervisor) stopTree() {
	for range 20 {
		tree := descendantsOf(os.Getpid())
		s.seenPids = slices.DeleteFunc(s.seenPids, func(pid int) bool { return !slices.Contains(tree, pid) })
		fresh := 0
		for _, pid := range tree {
			st := state(pid)
			if st == 0 || st == 'Z' {
				continue
			}
			if !slices.Contains(s.seenPids, pid) {
				s.seenPids = append(s.seenPids, pid)
				fresh++
			}
			if st != 'T' && st != 't' && syscall.Kill(pid, syscall.SIGSTOP) == nil && !slices.Contains(s.stoppedPids, pid) {
				s.stoppedPids = append(s.stoppedPids, pid)
			}
		}
		if fresh == 0 {
			return
		}
	}
}

// treeRuns reports whether a process of the stopped tree runs again.
func (s *supervisor) treeRuns() bool {
	for _, pid := range s.seenPids {
		if st := state(pid); st != 0 && st != 'T' && st != 't' && st != 'Z' {
			return true
		}
	}
	return false
}

// giveTerminalBack hands the terminal to zkr's job when COMMAND stops or
// ends, if COMMAND's process group has it: after bg the shell has it, and
// taking it from the shell would leave the shell without its terminal.
func (s *supervisor) giveTerminalBack() {
	if s.tty < 0 {
		return
	}
	if fg, err := tcgetpgrp(s.tty); err == nil && fg == s.pid {
		setForeground(s.tty, s.shellPgrp)
	}
}

// zkrHasTerminal reports whether zkr's job is the terminal's foreground
// job (or COMMAND is, on zkr's behalf).
func (s *supervisor) zkrHasTerminal() bool {
	if s.tty < 0 {
		return false
	}
	fg, err := tcgetpgrp(s.tty)
	return err == nil && (fg == s.shellPgrp || fg == s.pid)
}

// resumeTree continues what Ctrl-Z and stopTree stopped.
func (s *supervisor) resumeTree() {
	_ = syscall.Kill(-s.pid, syscall.SIGCONT)
	for _, pid := range s.stoppedPids {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	s.stoppedPids, s.seenPids = nil, nil
}

// signalTree sends sig to COMMAND's process group and to every process
// that is the supervisor's child: orphans of the tree come here, those in
// sessions of their own too.
func (s *supervisor) signalTree(sig syscall.Signal) {
	_ = syscall.Kill(-s.pid, sig)
	for _, pid := range childrenOf(os.Getpid()) {
		_ = syscall.Kill(pid, sig)
		if sig == syscall.SIGTERM {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
}

// killTree kills the whole tree, again and again as orphans are handed to
// the supervisor, until none is left (or five seconds have passed).
func (s *supervisor) killTree() {
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.signalTree(syscall.SIGKILL)
		if s.treeEmpty() || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond) // the killed are reaped and their orphans handed over
	}
}

// treeEmpty reports whether the supervisor has no child left but zombies
// about to be reaped.
func (s *supervisor) treeEmpty() bool {
	for _, pid := range childrenOf(os.Getpid()) {
		if state(pid) != 'Z' {
			return false
		}
	}
	return true
}

// descendantsOf lists every process below root, from one read of /proc.
func descendantsOf(root int) []int {
	dirs, _ := os.ReadDir("/proc")
	kids := map[int][]int{}
	for _, d := range dirs {
		if pid, err := strconv.Atoi(d.Name()); err == nil {
			if pp := parentOf(pid); pp > 0 {
				kids[pp] = append(kids[pp], pid)
			}
		}
	}
	var out []int
	for queue := kids[root]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, kids[queue[0]]...)
	}
	return out
}

// childrenOf lists the processes whose parent is ppid, from /proc.
func childrenOf(ppid int) []int {
	dirs, _ := os.ReadDir("/proc")
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if parentOf(pid) == ppid {
			out = append(out, pid)
		}
	}
	return out
}

// statFields returns the fields of /proc/PID/stat after the command name.
func statFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

func parentOf(pid int) int {
	f := statFields(pid)
	if len(f) < 2 {
		return -1
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

func state(pid int) byte {
	f := statFields(pid)
	if len(f) < 1 || f[0] == "" {
		return 0
	}
	return f[0][0]
}

// terminalMode returns the process group of zkr's job if stdin is zkr's
// controlling terminal, else -1 (cron, systemd, CI), and whether zkr runs
// under job control: on a terminal, in a process group that is not
// orphaned, so that a shell can stop its job and continue it (fg, bg).
// Under script -c, ssh -t, xterm -e or docker run -it, zkr's group is
// orphaned: the kernel discards the SIGTSTP zkr would send itself, and
// nothing could fg it.
func terminalMode() (pgrp int, jobControl bool) {
	if _, err := tcgetpgrp(0); err != nil {
		return -1, false
	}
	pgrp = syscall.Getpgrp()
	return pgrp, !orphaned(pgrp)
}

// orphaned applies the kernel's rule: a process group is orphaned unless
// one of its members has a parent in the same session but another group.
func orphaned(pgrp int) bool {
	self := statFields(os.Getpid())
	if len(self) < 4 {
		return true
	}
	sid := self[3]
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		f := statFields(pid) // state ppid pgrp session ...
		if len(f) < 4 || f[2] != strconv.Itoa(pgrp) {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		if p := statFields(ppid); len(p) >= 4 && p[2] != strconv.Itoa(pgrp) && p[3] == sid {
			return false
		}
	}
	return true
}

func tcgetpgrp(fd int) (int, error) {
	var pgrp int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp))); errno != 0 {
		return 0, errno
	}
	return int(pgrp), nil
}

// setForeground makes pgrp the terminal's foreground process group. A
// process outside the foreground group gets SIGTTOU for that unless it
// ignores it, so SIGTTOU is ignored for the moment of the call (and only
// then: COMMAND, started earlier, must not inherit it ignored).
func setForeground(tty, pgrp int) {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	p := int32(pgrp)
	_, _, _ = syscall.Syscall(syscall.SYS_IOCTL, uintptr(tty), syscall.TIOCSPGRP, uintptr(unsafe.Pointer(&p)))
}
