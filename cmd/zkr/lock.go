package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// lock, rlock, wlock and sem: take something, run COMMAND, give it back;
// or, without COMMAND, hold it until told to give it back.

// globalEnvHelp lists the variables of the global options, for the
// ENVIRONMENT section of each manual page.
const globalEnvHelp = `    ZKR_CONNECT (or ZK_CONNECT), ZKR_SESSION_TIMEOUT, ZKR_DIAL_TIMEOUT,
    ZKR_NAMESPACE, ZKR_AUTH, ZKR_AUTH_FILE, ZKR_ACL, ZKR_TLS_CA, ZKR_TLS_CERT,
    ZKR_TLS_KEY, ZKR_ID, ZKR_VERBOSE, ZKR_LOG_LEVEL, ZKR_LOG_FORMAT
                         the global options (see GLOBAL OPTIONS); an
                         option on the command line wins.
`

// waitOptionsHelp are the options of zkr lock, rlock, wlock, sem and elect
// about waiting and COMMAND, as flock(1) has them.
const waitOptionsHelp = `    -w S, --timeout S
           give up after S: seconds (2.5, as flock -w) or a duration (1m30s),
           counted from the start, connecting included. 124 if ZooKeeper
           answered and the hold was still taken; 125 if no session could
           be made in time, or the link to ZooKeeper was down when the time
           ran out: ZooKeeper down is not a busy lock. -w 0 is -n. Default:
           wait as long as it takes (connecting is bounded by
           --dial-timeout).
    -n, --nonblock
           do not wait: if the hold is not free at once, exit with the
           conflict exit code and leave nothing behind (as flock -n).
    -E N, --conflict-exit-code N
           the status of -n (or -w 0) finding the hold taken (default 1, as
           flock -E).
    -c CMD, --command CMD
           run CMD with /bin/sh -c, as flock -c does, instead of
           COMMAND [ARGS...].
`

const heldOptionsHelp = waitOptionsHelp + `    --lease D
           the hold ends by itself D after it is granted (seconds or a
           duration; the recipe's lease time): its node is deleted then,
           even if zkr never gives it back. A COMMAND still running is
           stopped as on a lost hold, early enough to be dead when the lease
           ends (SIGTERM --grace and 100ms before, SIGKILL 100ms before),
           and zkr exits 122; with COMMAND, D must be longer than --grace
           plus 100ms. Without COMMAND, zkr exits 122 when the lease ends.
    --grace D
           when the hold is lost, how long COMMAND has between SIGTERM and
           SIGKILL. It must end before the server can give the hold to
           anyone else: the default, and the largest value accepted, is
           (session timeout/3 - max(session timeout/30, 100ms)) / 2, about
           1.5s for the default 10s session; a longer one is refused
           (exit 2) with the largest safe value.
`

const heldEnvHelp = `ENVIRONMENT
` + globalEnvHelp + `    COMMAND gets, besides zkr's own environment:
    ZKR_FENCING_TOKEN    the fencing token: the czxid of the hold's node, a
                         decimal number that grows from each holder to the
                         next, even if PATH is deleted and made again.
    ZKR_LOCK_PATH        PATH, as given.
    ZKR_LOCK_NODE        the hold's own node under PATH.
    ZKR_PARTICIPANT_ID   --id.
`

// holdOnlyHelp is how the hold subcommands hold without COMMAND.
const holdOnlyHelp = `    Without COMMAND (as etcdctl lock NAME), zkr prints one line on stdout,
    the fencing token and the hold's node separated by a space, and holds
    until SIGINT, SIGTERM, SIGQUIT or SIGHUP, or until its stdin ends
    (Ctrl-D, or the other end of a pipe closed): then it releases and
    exits 0. A hold lost meanwhile (or a --lease run out) ends zkr at once
    with 122 and a message. zkr never takes a hold only to drop it: a
    stdin already at its end (/dev/null, which a script's background job
    reads; a file; a closed pipe) is refused at start with 2, nothing sent,
    and a stdin that ends before the hold is granted makes zkr leave the
    queue, with 2. A script holds the lock across several commands with a
    pipe for stdin, as coproc gives:
        coproc HOLD { zkr lock /jobs/x; }
        read -r token node <&"${HOLD[0]}"
        ... commands that pass on "$token" ...
        exec {HOLD[1]}>&-; wait "$HOLD_PID"   # releases: 0, or 122 if lost
`

const lockHelp = `NAME
    zkr lock - run a command while holding a ZooKeeper mutex

SYNOPSIS
    zkr lock [OPTIONS] PATH [--] COMMAND [ARGS...]
    zkr lock [OPTIONS] PATH -c 'COMMAND LINE'
    zkr lock [OPTIONS] PATH

DESCRIPTION
    Waits for the mutex at PATH, runs COMMAND, and releases the mutex when
    COMMAND ends; zkr exits with COMMAND's status. Waiters are served in
    the order they came (FIFO), together with Curator InterProcessMutex and
    Go recipes/mutex users of the same PATH.

    While COMMAND runs, zkr watches the hold. If it can no longer be trusted
    (no answer from ZooKeeper for 2/3 of --session-timeout, so the server
    may soon give the lock to the next waiter), COMMAND and everything it
    started get SIGTERM, then SIGKILL after --grace, and zkr exits 122.
    Ctrl-Z, fg and bg work as in zkr --help: a job stopped for about 2/3
    of --session-timeout has lost its hold (zkr is stopped too, and
    nothing keeps its session alive): COMMAND is killed then, and fg or bg
    report 122. What COMMAND runs as another user (sudo) is beyond zkr's reach:
    zkr cannot kill it.

    SIGINT, SIGTERM, SIGQUIT or SIGHUP while waiting: zkr leaves the queue
    and exits 128+signal. While COMMAND runs: the signal goes to COMMAND's
    process group (a stopped COMMAND goes on to act on it once zkr has
    checked the hold), and zkr releases the lock once COMMAND has exited.

` + holdOnlyHelp + `
    With -v, zkr says when its view of ZooKeeper goes stale (link down,
    session lost) and when it is current again, with the time of each.

OPTIONS
` + heldOptionsHelp + anyKindHelp + `
GLOBAL OPTIONS
` + globalOptionsHelp + `
` + exitStatusHeld + `
` + heldEnvHelp + `
EXAMPLES
    zkr lock /jobs/nightly -- ./nightly.sh
    zkr lock -w 10 /jobs/nightly -c './nightly.sh > log'; echo "status $?"
    zkr --connect zk1:2181,zk2:2181 lock /deploy -- \
        sh -c 'deploy --fencing-token "$ZKR_FENCING_TOKEN"'
    coproc HOLD { zkr lock /deploy; }; read -r token node <&"${HOLD[0]}"
`

const rlockHelp = `NAME
    zkr rlock - run a command while holding the read side of a read-write lock

SYNOPSIS
    zkr rlock [OPTIONS] PATH [--] COMMAND [ARGS...]
    zkr rlock [OPTIONS] PATH -c 'COMMAND LINE'
    zkr rlock [OPTIONS] PATH

DESCRIPTION
    As zkr lock, on the shared side of the read-write lock at PATH (Curator's
    InterProcessReadWriteLock): any number of rlock holders run at once; an
    rlock waits only for wlock holders and waiters that came before it.
    Without COMMAND, it holds until told, as zkr lock does.

OPTIONS
` + heldOptionsHelp + anyKindHelp + `
GLOBAL OPTIONS
` + globalOptionsHelp + `
` + exitStatusHeld + `
` + heldEnvHelp + `
EXAMPLES
    zkr rlock /config/schema -- ./report.sh
`

const wlockHelp = `NAME
    zkr wlock - run a command while holding the write side of a read-write lock

SYNOPSIS
    zkr wlock [OPTIONS] PATH [--] COMMAND [ARGS...]
    zkr wlock [OPTIONS] PATH -c 'COMMAND LINE'
    zkr wlock [OPTIONS] PATH

DESCRIPTION
    As zkr lock, on the exclusive side of the read-write lock at PATH: the
    holder runs alone, with no rlock or other wlock holder; it waits for
    everyone who came before it. Without COMMAND, it holds until told, as
    zkr lock does.

OPTIONS
` + heldOptionsHelp + anyKindHelp + `
GLOBAL OPTIONS
` + globalOptionsHelp + `
` + exitStatusHeld + `
` + heldEnvHelp + `
EXAMPLES
    zkr wlock /config/schema -- ./migrate.sh
`

const semHelp = `NAME
    zkr sem - run a command while holding a lease of a counting semaphore

SYNOPSIS
    zkr sem --max N [OPTIONS] PATH [--] COMMAND [ARGS...]
    zkr sem --max N [OPTIONS] PATH -c 'COMMAND LINE'
    zkr sem --max N [OPTIONS] PATH

DESCRIPTION
    As zkr lock, with one lease of the semaphore at PATH that has N leases
    (Curator's InterProcessSemaphoreV2 layout: PATH/locks, PATH/leases): at
    most N holders run at once. Every user of PATH must give the same N.
    Without COMMAND, it holds the lease until told, as zkr lock does.

OPTIONS
    --max N
           the number of leases (required, at least 1).
` + heldOptionsHelp + anyKindHelp + `
GLOBAL OPTIONS
` + globalOptionsHelp + `
` + exitStatusHeld + `
` + heldEnvHelp + `
EXAMPLES
    zkr sem --max 2 /pools/gpu -- ./train.sh
`

// waitOptions are the options of every subcommand that waits for a hold
// (elect included): how long, and what to run.
type waitOptions struct {
	timeout      secondsFlag
	nonblock     bool
	conflictCode int
	command      commandFlag
	grace        graceFlag
}

func (o *waitOptions) register(fs *flag.FlagSet) {
	fs.Var(&o.timeout, "timeout", "")
	fs.Var(&o.timeout, "w", "")
	fs.Var(&o.grace, "grace", "")
	fs.BoolVar(&o.nonblock, "nonblock", false, "")
	fs.BoolVar(&o.nonblock, "n", false, "")
	fs.IntVar(&o.conflictCode, "conflict-exit-code", 1, "")
	fs.IntVar(&o.conflictCode, "E", 1, "")
	fs.Var(&o.command, "command", "")
	fs.Var(&o.command, "c", "")
}

func (o *waitOptions) check(sessionTimeout time.Duration) error {
	if o.timeout.d < 0 {
		return fmt.Errorf("--timeout %v: must not be negative", o.timeout.d)
	}
	if o.conflictCode < 0 || o.conflictCode > 255 {
		return fmt.Errorf("--conflict-exit-code %d: want 0 to 255", o.conflictCode)
	}
	return o.grace.check(sessionTimeout)
}

// noWait reports whether to take the hold only if it is free at once: -n,
// or a timeout of 0 (flock -w 0).
func (o *waitOptions) noWait() bool {
	return o.nonblock || (o.timeout.set && o.timeout.d == 0)
}

// commandArgv is COMMAND's argv: what follows PATH, or -c's command line
// for /bin/sh, as flock -c runs it. Empty: no COMMAND.
func (o *waitOptions) commandArgv(argv []string) ([]string, error) {
	switch {
	case o.command.set && len(argv) > 0:
		return nil, fmt.Errorf("-c %q and COMMAND %q: give one", o.command.line, argv[0])
	case o.command.set && o.command.line == "":
		return nil, errors.New("-c '': an empty command line")
	case o.command.set:
		return []string{"/bin/sh", "-c", o.command.line}, nil
	}
	return argv, nil
}

// deadline is ctx bounded by --timeout, counted from now, connecting
// included, as flock -w counts.
func (o *waitOptions) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if o.timeout.d > 0 {
		return context.WithTimeoutCause(ctx, o.timeout.d, errTimedOut)
	}
	return ctx, func() {}
}

// dialFailed is zkr's status when no session could be made: 125, whether
// --timeout or --dial-timeout cut it short, since a ZooKeeper that
// cannot be reached says nothing of the hold (124 is for a busy one), or
// 128+signal.
func (o *waitOptions) dialFailed(ctx context.Context, log *logger, sig *signals, g *globals, err error) int {
	if errors.Is(context.Cause(ctx), errTimedOut) {
		log.printf("timed out after %v connecting to %s: no session with ZooKeeper (down or unreachable), so nothing is known of the hold", o.timeout.d, g.connect)
		return exitFailed
	}
	return sig.failed(log, err)
}

// timedOut is zkr's status when --timeout passed in the queue: 124 if the
// hold was taken as far as ZooKeeper said, 125 if the link to ZooKeeper was
// down when the time ran out.
func (o *waitOptions) timedOut(log *logger, client *framework.Client, what string) int {
	if st := client.State(); !st.IsConnected() {
		log.printf("timed out after %v waiting for %s while the link to ZooKeeper was down (%v): whether it is free is unknown", o.timeout.d, what, st)
		return exitFailed
	}
	log.printf("timed out after %v waiting for %s", o.timeout.d, what)
	return exitTimeout
}

// heldOptions are the options of the hold subcommands.
type heldOptions struct {
	waitOptions
	lease secondsFlag
}

func (o *heldOptions) register(fs *flag.FlagSet) {
	o.waitOptions.register(fs)
	fs.Var(&o.lease, "lease", "")
}

// check refuses what is wrong before anything is contacted; withCommand
// says whether a COMMAND will run.
func (o *heldOptions) check(sessionTimeout time.Duration, withCommand bool) error {
	if err := o.waitOptions.check(sessionTimeout); err != nil {
		return err
	}
	if o.lease.set && o.lease.d <= 0 {
		return fmt.Errorf("--lease %v: must be positive", o.lease.d)
	}
	if !withCommand {
		return nil
	}
	grace := o.grace.d
	if !o.grace.set {
		grace = maxGrace(sessionTimeout)
	}
	return o.checkLease(grace)
}

// checkLease refuses a --lease too short for COMMAND to be stopped, with
// grace, before it ends.
func (o *heldOptions) checkLease(grace time.Duration) error {
	if o.lease.set && o.lease.d <= grace+minMargin {
		return fmt.Errorf("--lease %v: COMMAND needs --grace (%v) plus %v to be stopped before the lease ends; give a longer --lease or a shorter --grace", o.lease.d, grace, minMargin)
	}
	return nil
}

// secondsFlag is a duration given as Go writes one (1m30s) or as flock's
// seconds (2.5).
type secondsFlag struct {
	d   time.Duration
	set bool
}

func (f *secondsFlag) String() string { return f.d.String() }

func (f *secondsFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || math.IsNaN(secs) || math.IsInf(secs, 0) || math.Abs(secs) > math.MaxInt64/float64(time.Second) {
			return errors.New("want seconds (2.5) or a duration (1m30s)")
		}
		d = time.Duration(secs * float64(time.Second))
	}
	f.d, f.set = d, true
	return nil
}

// commandFlag is -c: a command line for /bin/sh.
type commandFlag struct {
	line string
	set  bool
}

func (f *commandFlag) String() string { return f.line }

func (f *commandFlag) Set(s string) error {
	f.line, f.set = s, true
	return nil
}

// graceFlag is --grace: set or not, and whether it fits the slack.
type graceFlag struct {
	d   time.Duration
	set bool
}

func (g *graceFlag) String() string { return g.d.String() }

func (g *graceFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("parse error")
	}
	g.d, g.set = d, true
	return nil
}

// check refuses a --grace that is negative or that would let COMMAND run
// past the moment the server can grant the hold elsewhere, and a session
// timeout that leaves no time at all to stop COMMAND.
func (g *graceFlag) check(sessionTimeout time.Duration) error {
	if sessionTimeout > 0 && graceBudget(sessionTimeout) < minBudget {
		return sessionTooShort("--session-timeout " + sessionTimeout.String())
	}
	if g.d < 0 {
		return fmt.Errorf("--grace %v: must not be negative", g.d)
	}
	if limit := maxGrace(sessionTimeout); g.set && g.d > limit {
		return fmt.Errorf("--grace %v: COMMAND could outlive the hold; with a session timeout of %v the largest safe value is %v", g.d, sessionTimeout, limit)
	}
	return nil
}

// forSession is the grace to use under the session timeout the server
// negotiated: the one given, or the largest safe one.
func (g *graceFlag) forSession(timeout time.Duration) (time.Duration, error) {
	if err := g.check(timeout); err != nil {
		return 0, err
	}
	if g.set {
		return g.d, nil
	}
	return maxGrace(timeout), nil
}

// grant is what the hold subcommands have in common once granted.
type grant struct {
	token   int64
	node    string
	session int64
	done    <-chan struct{}
	err     func() error
	release func() error
	expiry  func() (time.Time, bool) // the lease's end, with --lease
}

// newGrant is the grant of a recipe's hold (or lease).
func newGrant(h *hold.Hold) *grant {
	return &grant{h.Token(), h.Path(), h.SessionID(), h.Done(), h.Err, h.Release, h.Expiry}
}

// takeOptions are what a taker takes the hold with.
type takeOptions struct {
	id     string
	noWait bool          // only if free at once
	lease  time.Duration // the recipe's lease time, or 0: none
}

// taker acquires one grant; done frees what it made, after release.
type taker func(ctx context.Context, c *framework.Client, path string, o takeOptions) (g *grant, done func() error, err error)

func runLock(a *app, g *globals, args []string) int {
	return a.held("lock", lockHelp, g, args, nil, func(ctx context.Context, c *framework.Client, path string, o takeOptions) (*grant, func() error, error) {
		opts := []mutex.Option{mutex.WithParticipantID(o.id)}
		if o.lease > 0 {
			opts = append(opts, mutex.WithLeaseTime(o.lease))
		}
		m, err := mutex.New(c, path, opts...)
		if err != nil {
			return nil, nil, err
		}
		acquire := m.Acquire
		if o.noWait {
			acquire = m.TryAcquire
		}
		h, err := acquire(ctx)
		if err != nil {
			return nil, nil, errors.Join(err, m.Close())
		}
		return newGrant(h), m.Close, nil
	})
}

func runRLock(a *app, g *globals, args []string) int {
	return a.held("rlock", rlockHelp, g, args, nil, rwTaker(false))
}

func runWLock(a *app, g *globals, args []string) int {
	return a.held("wlock", wlockHelp, g, args, nil, rwTaker(true))
}

func rwTaker(write bool) taker {
	return func(ctx context.Context, c *framework.Client, path string, o takeOptions) (*grant, func() error, error) {
		opts := []rwlock.Option{rwlock.WithParticipantID(o.id)}
		if o.lease > 0 {
			opts = append(opts, rwlock.WithLeaseTime(o.lease))
		}
		l, err := rwlock.New(c, path, opts...)
		if err != nil {
			return nil, nil, err
		}
		acquire, try := l.ReadLock().Acquire, l.ReadLock().TryAcquire
		if write {
			acquire, try = l.WriteLock().Acquire, l.WriteLock().TryAcquire
		}
		if o.noWait {
			acquire = try
		}
		h, err := acquire(ctx)
		if err != nil {
			return nil, nil, errors.Join(err, l.Close())
		}
		return newGrant(h), l.Close, nil
	}
}

func runSem(a *app, g *globals, args []string) int {
	var leases int
	return a.held("sem", semHelp, g, args, func(fs *flag.FlagSet) {
		fs.IntVar(&leases, "max", 0, "")
	}, func(ctx context.Context, c *framework.Client, path string, o takeOptions) (*grant, func() error, error) {
		opts := []semaphore.Option{semaphore.WithParticipantID(o.id)}
		if o.lease > 0 {
			opts = append(opts, semaphore.WithLeaseTime(o.lease))
		}
		s, err := semaphore.New(c, path, leases, opts...)
		if err != nil {
			return nil, nil, err
		}
		acquire := s.Acquire
		if o.noWait {
			acquire = s.TryAcquire
		}
		leases, err := acquire(ctx, 1)
		if err != nil {
			return nil, nil, errors.Join(err, s.Close())
		}
		return newGrant(leases[0]), s.Close, nil
	}, func() error {
		if leases < 1 {
			return fmt.Errorf("--max %d: need at least 1 lease (give --max N)", leases)
		}
		return nil
	})
}

// held is the common life of lock, rlock, wlock and sem: parse, connect,
// take, run COMMAND under the hold (or hold until told), give back. extra
// adds subcommand flags; checks validate them.
func (a *app) held(name, help string, g *globals, args []string, extra func(*flag.FlagSet), take taker, checks ...func() error) int {
	var o heldOptions
	fs := newFlagSet(name)
	g.register(fs)
	o.register(fs)
	kinds := newKindCheck(fs, name)
	if extra != nil {
		extra(fs)
	}
	var path string
	var argv []string
	code, ok := a.parseArgs(name, help, func() (err error) {
		if path, argv, err = parseCommandLine(fs, args); err != nil {
			return err
		}
		if argv, err = o.commandArgv(argv); err != nil {
			return err
		}
		for _, c := range append([]func() error{g.checkHolding, func() error { return o.check(g.sessionTimeout, len(argv) > 0) }}, checks...) {
			if err := c(); err != nil {
				return err
			}
		}
		return nil
	})
	if !ok {
		return code
	}
	opts, err := g.prepare()
	if err == nil {
		err = g.checkOwnTree(path)
	}
	if err != nil {
		return a.usage("zkr "+name, "%v", err)
	}
	log := a.logger(name, g)
	var ch *child                 // nil: no COMMAND, zkr holds until told
	var stdinDone <-chan struct{} // without COMMAND: closed when stdin ends
	if len(argv) > 0 {
		if _, err := exec.LookPath(argv[0]); err != nil {
			log.printf("%v", err)
			return commandError(err)
		}
		ch = &child{argv: argv, log: log}
	} else {
		if stdinAtEnd() {
			return a.usage("zkr "+name, "stdin is at its end (/dev/null, which a script's background job reads; a file; a closed pipe): without COMMAND zkr holds until stdin ends, so it would release at once; give COMMAND, or a stdin that stays open while the hold should last (coproc)")
		}
		// No COMMAND inherits what zkr does with it: reading stdin from
		// the background of a terminal fails (EIO) rather than stopping
		// zkr (SIGTTIN), whose session would lapse.
		signal.Ignore(syscall.SIGTTIN)
		stdinDone = stdinEnded()
	}

	sig := watchSignals(ch)
	defer sig.stop()
	ctx, cancel := o.deadline(sig.ctx)
	defer cancel()
	if stdinDone != nil {
		// A stdin that ends before the grant would drop the hold at once.
		ctx, cancel = cancelOn(ctx, stdinDone, errStdinEnded)
		defer cancel()
	}
	stdinEndedFirst := func() bool {
		if !errors.Is(context.Cause(ctx), errStdinEnded) {
			return false
		}
		log.printf("stdin ended before %s was granted: left the queue, nothing held (without COMMAND zkr holds only while stdin is open)", path)
		return true
	}
	client, err := g.dial(ctx, opts)
	if err != nil {
		if stdinEndedFirst() {
			return exitUsage
		}
		return o.dialFailed(ctx, log, sig, g, err)
	}
	defer closeClient(client)
	timeout, grace, err := sessionGrace(client, o.grace)
	if err == nil && ch != nil {
		err = o.checkLease(grace)
	}
	if err != nil {
		return a.usage("zkr "+name, "%v", err)
	}
	defer watchLink(client, log)()

	if code, refused := kinds.refuse(ctx, client, path, log); refused {
		return code
	}
	id := g.participantID()
	log.infof("waiting for %s as %s", path, id)
	g.waiting(path)
	gr, done, err := take(ctx, client, path, takeOptions{id: id, noWait: o.noWait(), lease: o.lease.d})
	if err != nil {
		if s, _ := sig.received(); s != nil {
			log.infof("%v while waiting: left the queue", s)
			return signalCode(s)
		}
		if stdinEndedFirst() {
			return exitUsage
		}
		if o.noWait() && errors.Is(err, zkrecipes.ErrWouldBlock) {
			log.infof("%s is held: not waiting (-n)", path)
			return o.conflictCode
		}
		if errors.Is(context.Cause(ctx), errTimedOut) {
			return o.timedOut(log, client, path)
		}
		log.printf("%v", err)
		return exitFailed
	}
	defer done()
	log.infof("holding %s (fencing token %d)", path, gr.token)
	g.holding(path, gr.token, gr.err)
	if ch == nil {
		return holdUntilTold(a.stdout, log, sig, stdinDone, path, gr)
	}
	ch.timeout, ch.grace = timeout, grace

	h := held{gr.done, gr.err, func() error { return verifyNode(client, gr.node, gr.session, ch.timeout) }}
	if end, ok := gr.expiry(); ok {
		// The lease's end deletes the node: COMMAND must be dead by then.
		stopLease := h.endsBefore(end.Add(-ch.grace-minMargin), fmt.Errorf("--lease %v ends at %s", o.lease.d, end.Format(stampLayout)))
		defer stopLease()
	}
	out, err := ch.run([]string{
		"ZKR_FENCING_TOKEN=" + strconv.FormatInt(gr.token, 10),
		"ZKR_LOCK_PATH=" + path,
		"ZKR_LOCK_NODE=" + gr.node,
		"ZKR_PARTICIPANT_ID=" + id,
	}, h)
	rerr := gr.release()
	switch {
	case errors.Is(err, errStopping):
		s, _ := sig.received()
		log.infof("%v before COMMAND started: released %s", s, path)
		return signalCode(s)
	case err != nil:
		log.printf("%v", err)
		return out.code
	case out.lost != nil:
		return exitLost
	}
	switch {
	case errors.Is(rerr, zkrecipes.ErrHoldLost):
		log.printf("warning: the hold was lost as COMMAND ended: %v", gr.err())
	case rerr != nil:
		log.printf("release: %v", rerr)
	}
	log.infof("released %s; COMMAND exited %d", path, out.code)
	return out.code
}

// holdUntilTold holds without COMMAND, as etcdctl lock NAME does: it
// prints the fencing token and the node, and holds until a signal or the
// end of stdin (stdinDone closes; then releases, 0), or until the hold is
// lost (122).
func holdUntilTold(stdout io.Writer, log *logger, sig *signals, stdinDone <-chan struct{}, path string, gr *grant) int {
	if s, _ := sig.received(); s != nil {
		// It came as the hold was granted: nobody was told of it.
		_ = gr.release()
		log.infof("%v while waiting: released %s", s, path)
		return signalCode(s)
	}
	select {
	case <-stdinDone:
		// So did this: the hold would be dropped as soon as printed.
		_ = gr.release()
		log.printf("stdin ended before %s was granted: released it, nothing held (without COMMAND zkr holds only while stdin is open)", path)
		return exitUsage
	default:
	}
	// No COMMAND inherits what zkr does with this: a reader of the token
	// that went away is an error to report, not a death by SIGPIPE that
	// leaves the node to the session timeout.
	signal.Ignore(syscall.SIGPIPE)
	if _, err := fmt.Fprintf(stdout, "%d %s\n", gr.token, gr.node); err != nil {
		_ = gr.release()
		log.printf("print the fencing token: %v: released %s", err, path)
		return exitFailed
	}
	log.infof("holding %s until SIGINT, SIGTERM, SIGQUIT, SIGHUP or the end of stdin", path)
	lost := false
	select {
	case <-sig.ctx.Done():
		s, _ := sig.received()
		log.infof("%v: releasing %s", s, path)
	case <-stdinDone:
		log.infof("stdin ended: releasing %s", path)
	case <-gr.done:
		lost = true
	}
	rerr := gr.release()
	switch {
	case lost || errors.Is(rerr, zkrecipes.ErrHoldLost):
		stampf(log, "hold lost (%v): %s was not held to the end", gr.err(), path)
		return exitLost
	case rerr != nil:
		log.printf("release: %v", rerr)
	}
	log.infof("released %s", path)
	return 0
}

// stdinAtEnd says whether zkr's stdin, not a terminal, has ended already,
// or cannot be read: a file (whose end is near), or a read that does not
// wait finds the end (/dev/null, a pipe whose writers are gone). What it
// reads on the way is dropped, as holdUntilTold drops what it reads.
func stdinAtEnd() bool {
	const fd = 0
	if isTerminal(fd) {
		return false
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return true // closed (<&-)
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFREG {
		return true
	}
	buf := make([]byte, 4096)
	for {
		var readable syscall.FdSet
		readable.Bits[0] = 1 << fd
		n, err := syscall.Select(fd+1, &readable, nil, nil, &syscall.Timeval{})
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil, n == 0:
			return false // nothing to read now: open
		}
		n, err = syscall.Read(fd, buf)
		switch {
		case errors.Is(err, syscall.EINTR):
		case errors.Is(err, syscall.EAGAIN):
			return false
		case err != nil, n == 0:
			return true
		}
	}
}

// cancelOn is ctx, cancelled with cause when ch closes.
func cancelOn(ctx context.Context, ch <-chan struct{}, cause error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-ch:
			cancel(cause)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// stdinEnded is closed when zkr's stdin ends (end of file, or an error
// other than a terminal's refusal to a background reader: then it tries
// again, until zkr's job is in the foreground).
func stdinEnded() <-chan struct{} {
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		buf := make([]byte, 512)
		for {
			_, err := os.Stdin.Read(buf)
			switch {
			case err == nil:
			case errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EINTR):
				time.Sleep(200 * time.Millisecond) // polling for the terminal
			default:
				return
			}
		}
	}()
	return ended
}

// endsBefore makes h end at t too, with why, unless it ends first. stop
// frees what it took.
func (h *held) endsBefore(t time.Time, why error) (stop func()) {
	first, cause := h.done, h.why
	done, quit, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var reason error // set before done closes, read after
	timer := time.NewTimer(time.Until(t))
	go func() {
		defer close(finished)
		select {
		case <-first:
			reason = cause()
		case <-timer.C:
			reason = why
		case <-quit:
			return
		}
		close(done)
	}()
	h.done = done
	h.why = func() error {
		select {
		case <-done:
			return reason
		default:
			return nil
		}
	}
	return func() {
		timer.Stop()
		close(quit)
		<-finished
	}
}

// sessionGrace returns the session timeout the server negotiated and the
// grace that fits it, or why the --grace given does not.
func sessionGrace(c *framework.Client, g graceFlag) (time.Duration, time.Duration, error) {
	timeout := c.Session().Timeout
	grace, err := g.forSession(timeout)
	if err != nil && timeout != 0 {
		err = fmt.Errorf("%w (the server negotiated the session timeout)", err)
	}
	return timeout, grace, err
}

// verifyNode asks the server, with a fresh request, whether node still
// exists and belongs to session: the check before COMMAND starts or goes on
// after a stop.
func verifyNode(c *framework.Client, node string, session int64, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), max(timeout/3, time.Second))
	defer cancel()
	ok, st, err := c.Exists(ctx, node)
	switch {
	case err != nil:
		return fmt.Errorf("no answer from ZooKeeper: %w", err)
	case !ok:
		return fmt.Errorf("%s is gone", node)
	case st.EphemeralOwner != session || c.Session().ID != session:
		return fmt.Errorf("%s no longer belongs to this session", node)
	}
	return nil
}

// errTimedOut is the cause of a --timeout.
var errTimedOut = errors.New("timed out")

// errStdinEnded is the cause of a wait that stdin's end cut short.
var errStdinEnded = errors.New("stdin ended")
