package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os/exec"
	"strconv"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// lock, rlock, wlock and sem: take something, run COMMAND, give it back.

// globalEnvHelp lists the variables of the global options, for the
// ENVIRONMENT section of each manual page.
const globalEnvHelp = `    ZKR_CONNECT (or ZK_CONNECT), ZKR_SESSION_TIMEOUT, ZKR_CONNECT_TIMEOUT,
    ZKR_NAMESPACE, ZKR_AUTH, ZKR_AUTH_FILE, ZKR_TLS_CA, ZKR_TLS_CERT,
    ZKR_TLS_KEY, ZKR_ID, ZKR_VERBOSE
                         the global options (see GLOBAL OPTIONS); an
                         option on the command line wins.
`

const heldOptionsHelp = `    --timeout D
           give up after D (exit 124), connecting to ZooKeeper included.
           Default: wait as long as it takes (connecting is bounded by
           --connect-timeout).
    -n, --nonblock
           do not wait: if the hold is not free at once, exit with the
           conflict exit code and leave nothing behind (as flock -n).
    --conflict-exit-code N
           the status of -n finding the hold taken (default 1, as flock).
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

const lockHelp = `NAME
    zkr lock - run a command while holding a ZooKeeper mutex

SYNOPSIS
    zkr lock [OPTIONS] PATH [--] COMMAND [ARGS...]

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
    process group (a stopped COMMAND goes on to act on it once zkr has checked the
    hold), and zkr releases the lock once COMMAND has exited.

OPTIONS
` + heldOptionsHelp + `
GLOBAL OPTIONS
` + globalOptionsHelp + `
` + exitStatusHeld + `
` + heldEnvHelp + `
EXAMPLES
    zkr lock /jobs/nightly -- ./nightly.sh
    zkr lock --timeout 10s /jobs/nightly -- ./nightly.sh; echo "status $?"
    zkr --connect zk1:2181,zk2:2181 lock /deploy -- \
        sh -c 'deploy --fencing-token "$ZKR_FENCING_TOKEN"'
`

const rlockHelp = `NAME
    zkr rlock - run a command while holding the read side of a read-write lock

SYNOPSIS
    zkr rlock [OPTIONS] PATH [--] COMMAND [ARGS...]

DESCRIPTION
    As zkr lock, on the shared side of the read-write lock at PATH (Curator's
    InterProcessReadWriteLock): any number of rlock holders run at once; an
    rlock waits only for wlock holders and waiters that came before it.

OPTIONS
` + heldOptionsHelp + `
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

DESCRIPTION
    As zkr lock, on the exclusive side of the read-write lock at PATH: the
    holder runs alone, with no rlock or other wlock holder; it waits for
    everyone who came before it.

OPTIONS
` + heldOptionsHelp + `
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

DESCRIPTION
    As zkr lock, with one lease of the semaphore at PATH that has N leases
    (Curator's InterProcessSemaphoreV2 layout: PATH/locks, PATH/leases): at
    most N holders run at once. Every user of PATH must give the same N.

OPTIONS
    --max N
           the number of leases (required, at least 1).
` + heldOptionsHelp + `
GLOBAL OPTIONS
` + globalOptionsHelp + `
` + exitStatusHeld + `
` + heldEnvHelp + `
EXAMPLES
    zkr sem --max 2 /pools/gpu -- ./train.sh
`

// heldOptions are the options of the hold subcommands.
type heldOptions struct {
	timeout      time.Duration
	grace        graceFlag
	nonblock     bool
	conflictCode int
}

func (o *heldOptions) register(fs *flag.FlagSet) {
	fs.DurationVar(&o.timeout, "timeout", 0, "")
	fs.Var(&o.grace, "grace", "")
	fs.BoolVar(&o.nonblock, "nonblock", false, "")
	fs.BoolVar(&o.nonblock, "n", false, "")
	fs.IntVar(&o.conflictCode, "conflict-exit-code", 1, "")
}

func (o *heldOptions) check(sessionTimeout time.Duration) error {
	if o.timeout < 0 {
		return fmt.Errorf("--timeout %v: must not be negative", o.timeout)
	}
	if o.conflictCode < 0 || o.conflictCode > 255 {
		return fmt.Errorf("--conflict-exit-code %d: want 0 to 255", o.conflictCode)
	}
	return o.grace.check(sessionTimeout)
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
		return fmt.Errorf("--session-timeout %v: too short to stop COMMAND in time (between 2/3 of it, when the hold is in doubt, and all of it, when the server may grant the hold elsewhere, less a margin of at least %v, zkr needs at least %v); give at least %v",
			sessionTimeout, minMargin, minBudget, minSessionTimeout)
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
}

// taker acquires one grant (only if free at once with noWait); done frees
// what it made, after release.
type taker func(ctx context.Context, c *framework.Client, path, id string, noWait bool) (g *grant, done func() error, err error)

func runLock(a *app, g *globals, args []string) int {
	return a.held("lock", lockHelp, g, args, nil, func(ctx context.Context, c *framework.Client, path, id string, noWait bool) (*grant, func() error, error) {
		m, err := mutex.New(c, path, mutex.WithParticipantID(id))
		if err != nil {
			return nil, nil, err
		}
		acquire := m.Acquire
		if noWait {
			acquire = m.TryAcquire
		}
		h, err := acquire(ctx)
		if err != nil {
			return nil, nil, errors.Join(err, m.Close())
		}
		return &grant{h.Token(), h.Path(), h.SessionID(), h.Done(), h.Err, h.Release}, m.Close, nil
	})
}

func runRLock(a *app, g *globals, args []string) int {
	return a.held("rlock", rlockHelp, g, args, nil, rwTaker(false))
}

func runWLock(a *app, g *globals, args []string) int {
	return a.held("wlock", wlockHelp, g, args, nil, rwTaker(true))
}

func rwTaker(write bool) taker {
	return func(ctx context.Context, c *framework.Client, path, id string, noWait bool) (*grant, func() error, error) {
		l, err := rwlock.New(c, path, rwlock.WithParticipantID(id))
		if err != nil {
			return nil, nil, err
		}
		acquire, try := l.ReadLock().Acquire, l.ReadLock().TryAcquire
		if write {
			acquire, try = l.WriteLock().Acquire, l.WriteLock().TryAcquire
		}
		if noWait {
			acquire = try
		}
		h, err := acquire(ctx)
		if err != nil {
			return nil, nil, errors.Join(err, l.Close())
		}
		return &grant{h.Token(), h.Path(), h.SessionID(), h.Done(), h.Err, h.Release}, l.Close, nil
	}
}

func runSem(a *app, g *globals, args []string) int {
	var leases int
	return a.held("sem", semHelp, g, args, func(fs *flag.FlagSet) {
		fs.IntVar(&leases, "max", 0, "")
	}, func(ctx context.Context, c *framework.Client, path, id string, noWait bool) (*grant, func() error, error) {
		s, err := semaphore.New(c, path, leases, semaphore.WithParticipantID(id))
		if err != nil {
			return nil, nil, err
		}
		acquire := s.Acquire
		if noWait {
			acquire = s.TryAcquire
		}
		leases, err := acquire(ctx, 1)
		if err != nil {
			return nil, nil, errors.Join(err, s.Close())
		}
		l := leases[0]
		return &grant{l.Token(), l.Path(), l.SessionID(), l.Done(), l.Err, l.Release}, s.Close, nil
	}, func() error {
		if leases < 1 {
			return fmt.Errorf("--max %d: need at least 1 lease (give --max N)", leases)
		}
		return nil
	})
}

// held is the common life of lock, rlock, wlock and sem: parse, connect,
// take, run COMMAND under the hold, give back. extra adds subcommand flags;
// checks validate them.
func (a *app) held(name, help string, g *globals, args []string, extra func(*flag.FlagSet), take taker, checks ...func() error) int {
	var o heldOptions
	fs := newFlagSet(name)
	g.register(fs)
	o.register(fs)
	if extra != nil {
		extra(fs)
	}
	var path string
	var argv []string
	code, ok := a.parseArgs(name, help, func() (err error) {
		if path, argv, err = parseCommandLine(fs, args); err != nil {
			return err
		}
		for _, c := range append([]func() error{func() error { return o.check(g.sessionTimeout) }}, checks...) {
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
	if err != nil {
		return a.usage("zkr "+name, "%v", err)
	}
	log := a.logger(name, g)
	if _, err := exec.LookPath(argv[0]); err != nil {
		log.printf("%v", err)
		return commandError(err)
	}

	ch := &child{argv: argv, log: log}
	sig := watchSignals(ch)
	defer sig.stop()
	// --timeout counts from now, connecting included, as flock -w does.
	ctx, cancel := sig.ctx, context.CancelFunc(func() {})
	if o.timeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, o.timeout, errTimedOut)
	}
	defer cancel()
	client, err := g.dial(ctx, opts)
	if err != nil {
		if errors.Is(context.Cause(ctx), errTimedOut) {
			// No session: nothing is known of the hold, and 124 says busy.
			log.printf("timed out after %v connecting to %s: no session with ZooKeeper (down or unreachable), so nothing is known of the hold", o.timeout, g.connect)
			return exitFailed
		}
		return sig.failed(log, err)
	}
	defer closeClient(client)
	if ch.timeout, ch.grace, err = sessionGrace(client, o.grace); err != nil {
		return a.usage("zkr "+name, "%v", err)
	}

	id := g.participantID()
	log.infof("waiting for %s as %s", path, id)
	g.waiting(path)
	gr, done, err := take(ctx, client, path, id, o.nonblock)
	if err != nil {
		if s, _ := sig.received(); s != nil {
			log.infof("%v while waiting: left the queue", s)
			return signalCode(s)
		}
		if o.nonblock && errors.Is(err, zkrecipes.ErrWouldBlock) {
			log.infof("%s is held: not waiting (-n)", path)
			return o.conflictCode
		}
		if errors.Is(context.Cause(ctx), errTimedOut) {
			if st := client.State(); !st.IsConnected() {
				log.printf("timed out after %v waiting for %s while the link to ZooKeeper was down (%v): whether it is free is unknown", o.timeout, path, st)
				return exitFailed
			}
			log.printf("timed out after %v waiting for %s", o.timeout, path)
			return exitTimeout
		}
		log.printf("%v", err)
		return exitFailed
	}
	defer done()
	log.infof("holding %s (fencing token %d)", path, gr.token)
	g.holding(path, gr.token, gr.err)

	out, err := ch.run([]string{
		"ZKR_FENCING_TOKEN=" + strconv.FormatInt(gr.token, 10),
		"ZKR_LOCK_PATH=" + path,
		"ZKR_LOCK_NODE=" + gr.node,
		"ZKR_PARTICIPANT_ID=" + id,
	}, held{gr.done, gr.err, func() error { return verifyNode(client, gr.node, gr.session, ch.timeout) }})
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
