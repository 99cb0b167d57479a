package main

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

const electHelp = `NAME
    zkr elect - run a command only while leading an election

SYNOPSIS
    zkr elect [--requeue] [--grace D] [OPTIONS] PATH [--] COMMAND [ARGS...]
    zkr elect [OPTIONS] PATH -c 'COMMAND LINE'

DESCRIPTION
    Campaigns for leadership of PATH with Curator's LeaderSelector recipe
    (participants queue FIFO; the first one leads) and runs COMMAND once it
    leads. When COMMAND exits, leadership passes to the next participant.

    If leadership can no longer be trusted while COMMAND runs (the link to
    ZooKeeper has been down for 2/3 of --session-timeout), COMMAND and
    everything it started get SIGTERM, then SIGKILL after --grace: it never
    runs while another participant may lead. If zkr is killed, its
    supervisor kills COMMAND and everything it started, and the next
    participant leads once the session has expired (at most
    --session-timeout later). Ctrl-Z, fg and bg work as for zkr lock: a
    term stopped for about 2/3 of --session-timeout is lost, COMMAND is
    killed then, and fg or bg report 122. What COMMAND runs as another user (sudo) is
    beyond zkr's reach.

    Without --requeue, zkr campaigns once: it exits with COMMAND's status,
    or 122 if leadership was lost while COMMAND ran. -w and -n bound the
    wait to lead, as for zkr lock: 124 if someone else still leads when
    the time runs out, the conflict exit code (1) if -n finds someone
    leading.

    With --requeue, zkr joins the queue again each time COMMAND ends (on its
    own or because leadership was lost) and runs until a signal stops it.
    SIGINT, SIGTERM, SIGQUIT or SIGHUP while COMMAND runs are forwarded to
    it, and zkr exits with COMMAND's status once it has exited; while
    waiting to lead, zkr leaves the queue and exits 128+signal.

    With -v, zkr says when its view of ZooKeeper goes stale (link down,
    session lost) and when it is current again, with the time of each.

OPTIONS
    --requeue
           campaign again after each term, until stopped by a signal. Not
           with -w or -n, which are for one campaign.
` + waitOptionsHelp + `    --grace D
           when leadership is lost, how long COMMAND has between SIGTERM and
           SIGKILL: as for zkr lock, at most (and by default) the largest
           value that ends COMMAND before anyone else can be elected.
` + anyKindHelp + `    --id ID (global)
           the participant id zkr leader shows (default HOSTNAME:PID).

GLOBAL OPTIONS
` + globalOptionsHelp + `
EXIT STATUS
    N      COMMAND's own exit status (128+S if a signal S killed it): without
           --requeue, of its one term; with --requeue, of the term a signal
           interrupted.
    1      -n (or -w 0) found someone leading (-E changes it).
    2      Usage error (a PATH in /zookeeper, ZooKeeper's own tree,
           included). Nothing was contacted. Or PATH holds nodes of
           another kind of lock (see --any-kind): looked at, nothing made.
    122    Without --requeue: leadership was lost while COMMAND ran; COMMAND
           was stopped. Or COMMAND was killed on resume (fg, bg) because
           leadership was lost while it was stopped.
    124    -w passed while someone else led. COMMAND did not run.
    125    zkr failed: no connection to ZooKeeper, or a ZooKeeper error; or
           -w passed while connecting, or while the link to ZooKeeper was
           down.
    126, 127
           COMMAND cannot be executed, or is not found.
    129, 130, 131, 143
           SIGHUP, SIGINT, SIGQUIT or SIGTERM while waiting to lead (COMMAND
           was not running); zkr left the queue.

ENVIRONMENT
` + globalEnvHelp + `    COMMAND gets, besides zkr's own environment:
    ZKR_FENCING_TOKEN    the term's fencing token (czxid of the leader's
                         node), higher for every later term.
    ZKR_LOCK_PATH        PATH, as given.
    ZKR_PARTICIPANT_ID   --id.

EXAMPLES
    zkr elect --requeue --id "$(hostname)" /services/scheduler -- ./scheduler
    zkr elect /jobs/once -- ./migrate.sh    # one host runs it, others wait
    zkr elect -n /jobs/once -c './migrate.sh'  # or exit 1 if one already does
    zkr leader /services/scheduler
`

func runElect(a *app, g *globals, args []string) int {
	var requeue bool
	var o waitOptions
	fs := newFlagSet("elect")
	g.register(fs)
	o.register(fs)
	fs.BoolVar(&requeue, "requeue", false, "")
	kinds := newKindCheck(fs, "elect")
	var path string
	var argv []string
	code, ok := a.parseArgs("elect", electHelp, func() (err error) {
		if path, argv, err = parseCommandLine(fs, args); err != nil {
			return err
		}
		if argv, err = o.commandArgv(argv); err != nil {
			return err
		}
		switch {
		case len(argv) == 0:
			return errors.New("missing COMMAND (after PATH and --, or -c)")
		case requeue && o.timeout.set:
			return errors.New("--requeue and -w/--timeout: -w bounds one campaign; give one")
		case requeue && o.nonblock:
			return errors.New("--requeue and -n: -n is for one campaign; give one")
		}
		if err := g.checkHolding(); err != nil {
			return err
		}
		return o.check(g.sessionTimeout)
	})
	if !ok {
		return code
	}
	opts, err := g.prepare()
	if err == nil {
		err = g.checkOwnTree(path)
	}
	if err != nil {
		return a.usage("zkr elect", "%v", err)
	}
	log := a.logger("elect", g)
	if _, err := exec.LookPath(argv[0]); err != nil {
		log.printf("%v", err)
		return commandError(err)
	}

	ch := &child{argv: argv, log: log}
	sig := watchSignals(ch)
	defer sig.stop()
	ctx, cancel := o.deadline(sig.ctx)
	defer cancel()
	client, err := g.dial(ctx, opts)
	if err != nil {
		return o.dialFailed(ctx, log, sig, g, err)
	}
	defer closeClient(client)
	if ch.timeout, ch.grace, err = sessionGrace(client, o.grace); err != nil {
		return a.usage("zkr elect", "%v", err)
	}
	defer watchLink(client, log)()
	if code, refused := kinds.refuse(ctx, client, path, log); refused {
		return code
	}
	e := &election{g: g, log: log, sig: sig, client: client, child: ch, path: path, id: g.participantID(),
		requeue: requeue, opts: &o, deadline: ctx,
		began: make(chan struct{}), results: make(chan termResult), failed: make(chan error, 1), quit: make(chan struct{})}
	if o.noWait() {
		return e.once()
	}
	return e.run()
}

// electState is where zkr elect stands.
type electState int

const (
	// campaigning: in the queue, waiting to lead, or with --requeue
	// between terms. A signal ends zkr, and so does -w.
	campaigning electState = iota
	// leading: a term runs COMMAND on the selector's goroutine. A signal
	// reaches COMMAND, whose status is then zkr's.
	leading
	// interrupted: a signal reached a running COMMAND; its status is
	// zkr's, once it has ended.
	interrupted
	// over: zkr leaves the queue and exits with code.
	over
)

// election is one run of zkr elect: a selector campaigns and runs each
// term on its own goroutine; this state machine, on zkr's, decides what
// zkr does when a term begins or ends, the campaign fails, -w runs out or
// a signal comes.
type election struct {
	g        *globals
	log      *logger
	sig      *signals
	client   *framework.Client
	child    *child
	sel      *leader.Selector
	path     string
	id       string
	requeue  bool
	opts     *waitOptions
	deadline context.Context  // ends at -w, or with a signal
	timeUp   <-chan time.Time // -w's end, if given
	// began and results carry a term's start and end to zkr's goroutine.
	// Unbuffered: a term starts COMMAND only once zkr knows it leads (so
	// -w cannot end zkr under a running COMMAND), and the next term cannot
	// start before zkr has taken the last one's result, so the result
	// after a forwarded signal is the interrupted COMMAND's. quit frees a
	// term that begins or ends after zkr stopped listening.
	began   chan struct{}
	results chan termResult
	// failed: a campaign that fails (the queue node cannot be made, say)
	// is only reported to the error handler; without --requeue nothing
	// campaigns again, so zkr must hear of it or it would wait for ever.
	failed chan error
	quit   chan struct{}

	state electState
	code  int // zkr's status, once over
}

// termResult is how one term's COMMAND ended.
type termResult struct {
	out outcome
	err error
}

// run campaigns until the state machine is over, then leaves the queue.
func (e *election) run() int {
	selOpts := []leader.SelectorOption{
		leader.WithParticipantID(e.id),
		leader.WithErrorHandler(e.onError),
	}
	if e.requeue {
		selOpts = append(selOpts, leader.WithAutoRequeue())
	}
	e.g.waiting(e.path) // before Start: a term may begin at once
	sel, err := leader.NewSelector(e.client, e.path, e.term, selOpts...)
	if err != nil {
		e.log.printf("%v", err)
		return exitFailed
	}
	e.sel = sel
	if err := sel.Start(e.deadline); err != nil {
		if errors.Is(context.Cause(e.deadline), errTimedOut) {
			return e.opts.timedOut(e.log, e.client, "leadership of "+e.path)
		}
		return e.sig.failed(e.log, err)
	}
	e.log.infof("campaigning for %s as %s", e.path, e.id)
	if end, ok := e.deadline.Deadline(); ok {
		t := time.NewTimer(time.Until(end))
		defer t.Stop()
		e.timeUp = t.C
	}
	for e.state != over {
		select {
		case <-e.began:
			e.onTermBegan()
		case r := <-e.results:
			e.onTermEnded(r)
		case <-e.failures():
			e.finish(exitFailed)
		case <-e.signalled():
			e.onSignal()
		case <-e.timeout():
			e.finish(e.opts.timedOut(e.log, e.client, "leadership of "+e.path))
		}
	}
	close(e.quit)
	if err := sel.Close(); err != nil {
		e.log.printf("leave %s: %v", e.path, err)
	}
	return e.code
}

// once is a campaign that does not wait (-n, -w 0): the selector's mutex
// (Curator's LeaderSelector is an InterProcessMutex on PATH, node for
// node), taken only if free at once, and one term under it.
func (e *election) once() int {
	m, err := mutex.New(e.client, e.path, mutex.WithParticipantID(e.id))
	if err != nil {
		e.log.printf("%v", err)
		return exitFailed
	}
	defer m.Close()
	h, err := m.TryAcquire(e.sig.ctx)
	switch {
	case err == nil:
	case errors.Is(err, zkrecipes.ErrWouldBlock):
		e.log.infof("someone leads %s: not waiting (-n)", e.path)
		return e.opts.conflictCode
	default:
		return e.sig.failed(e.log, err)
	}
	ctx := h.Context(context.Background())
	r := e.lead(ctx, h)
	_ = h.Release()
	return e.termStatus(r)
}

// term is the selector's leadership function: once zkr has heard that it
// leads, it runs COMMAND under the term, on the selector's goroutine, and
// hands zkr how it ended.
func (e *election) term(ctx context.Context, h *hold.Hold) error {
	select {
	case e.began <- struct{}{}:
	case <-e.quit:
		return nil
	}
	r := e.lead(ctx, h)
	select {
	case e.results <- r:
	case <-e.quit:
	}
	return nil
}

// lead runs COMMAND under the term h, whose loss ends ctx.
func (e *election) lead(ctx context.Context, h *hold.Hold) termResult {
	token := h.Token()
	e.log.infof("leading %s as %s (fencing token %d)", e.path, e.id, token)
	e.g.holding(e.path, token, func() error { return context.Cause(ctx) })
	defer e.g.waiting(e.path)
	// The term belongs to the session it began on. After an expiry the
	// client silently makes a new session, on which a bare answer from the
	// server proves nothing: the check before COMMAND starts or goes on
	// finds the term's node owned by this very session, still the
	// client's (rule 3), as zkr lock does.
	session := e.client.Session().ID
	verify := func() error { return verifyNode(e.client, h.Path(), session, e.child.timeout) }
	out, err := e.child.run([]string{
		"ZKR_FENCING_TOKEN=" + strconv.FormatInt(token, 10),
		"ZKR_LOCK_PATH=" + e.path,
		"ZKR_PARTICIPANT_ID=" + e.id,
	}, held{ctx.Done(), func() error { return context.Cause(ctx) }, verify})
	return termResult{out, err}
}

// onError is the selector's error handler, on the selector's goroutine.
func (e *election) onError(err error) {
	e.log.printf("%v", err)
	if !e.requeue {
		select {
		case e.failed <- err:
		default: // one is enough to stop on
		}
	}
}

// failures is the campaign's failures while campaigning or leading.
func (e *election) failures() <-chan error {
	if e.state != campaigning && e.state != leading {
		return nil
	}
	return e.failed
}

// signalled is the signal's channel while campaigning or leading.
func (e *election) signalled() <-chan struct{} {
	if e.state != campaigning && e.state != leading {
		return nil
	}
	return e.sig.ctx.Done()
}

// timeout is -w's end while waiting to lead, else nil.
func (e *election) timeout() <-chan time.Time {
	if e.state != campaigning {
		return nil
	}
	return e.timeUp
}

// finish ends the state machine with zkr's status.
func (e *election) finish(code int) {
	e.state, e.code = over, code
}

// onTermBegan: zkr leads; the term runs COMMAND.
func (e *election) onTermBegan() {
	e.state = leading
}

// onTermEnded: a term's COMMAND ended (or could not start).
func (e *election) onTermEnded(r termResult) {
	if e.state == interrupted {
		e.finish(e.termStatus(r))
		return
	}
	s, forwarded := e.sig.received()
	switch {
	case !e.requeue || r.err != nil || forwarded:
		e.finish(e.termStatus(r))
		return
	case s != nil: // COMMAND had ended when the signal came
		e.finish(signalCode(s))
		return
	}
	e.state = campaigning
	if r.out.lost != nil {
		e.log.infof("leadership lost; campaigning again")
	} else {
		e.log.infof("COMMAND exited %d; campaigning again", r.out.code)
	}
}

// onSignal: SIGINT, SIGTERM, SIGQUIT or SIGHUP came.
func (e *election) onSignal() {
	s, forwarded := e.sig.received()
	if forwarded {
		// COMMAND has the signal: its status is zkr's, once it ends.
		e.state = interrupted
		return
	}
	e.log.infof("%v while waiting to lead: left the queue", s)
	e.finish(signalCode(s))
}

// termStatus is zkr's status after a term.
func (e *election) termStatus(r termResult) int {
	switch {
	case errors.Is(r.err, errStopping):
		s, _ := e.sig.received()
		return signalCode(s)
	case r.err != nil:
		e.log.printf("%v", r.err)
		return r.out.code
	case r.out.lost != nil && !e.requeue:
		return exitLost
	}
	return r.out.code
}
