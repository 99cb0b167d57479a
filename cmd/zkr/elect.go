package main

import (
	"context"
	"errors"
	"os/exec"
	"strconv"

	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
)

const electHelp = `NAME
    zkr elect - run a command only while leading an election

SYNOPSIS
    zkr elect [--requeue] [--grace D] [OPTIONS] PATH [--] COMMAND [ARGS...]

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
    or 122 if leadership was lost while COMMAND ran.

    With --requeue, zkr joins the queue again each time COMMAND ends (on its
    own or because leadership was lost) and runs until a signal stops it.
    SIGINT, SIGTERM or SIGHUP while COMMAND runs are forwarded to it, and zkr
    exits with COMMAND's status once it has exited; while waiting to lead,
    zkr leaves the queue and exits 128+signal.

OPTIONS
    --requeue
           campaign again after each term, until stopped by a signal.
    --grace D
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
    2      Usage error. Nothing was contacted. Or PATH holds nodes of
           another kind of lock (see --any-kind): looked at, nothing made.
    122    Without --requeue: leadership was lost while COMMAND ran; COMMAND
           was stopped. Or COMMAND was killed on resume (fg, bg) because
           leadership was lost while it was stopped.
    125    zkr failed: no connection to ZooKeeper, or a ZooKeeper error.
    126, 127
           COMMAND cannot be executed, or is not found.
    129, 130, 143
           SIGHUP, SIGINT or SIGTERM while waiting to lead (COMMAND was not
           running); zkr left the queue.

ENVIRONMENT
` + globalEnvHelp + `    COMMAND gets, besides zkr's own environment:
    ZKR_FENCING_TOKEN    the term's fencing token (czxid of the leader's
                         node), higher for every later term.
    ZKR_LOCK_PATH        PATH, as given.
    ZKR_PARTICIPANT_ID   --id.

EXAMPLES
    zkr elect --requeue --id "$(hostname)" /services/scheduler -- ./scheduler
    zkr elect /jobs/once -- ./migrate.sh    # one host runs it, others wait
    zkr leader /services/scheduler
`

func runElect(a *app, g *globals, args []string) int {
	var requeue bool
	var grace graceFlag
	fs := newFlagSet("elect")
	g.register(fs)
	fs.BoolVar(&requeue, "requeue", false, "")
	fs.Var(&grace, "grace", "")
	kinds := newKindCheck(fs, "elect")
	var path string
	var argv []string
	code, ok := a.parseArgs("elect", electHelp, func() (err error) {
		if path, argv, err = parseCommandLine(fs, args); err != nil {
			return err
		}
		if err := g.checkHolding(); err != nil {
			return err
		}
		return grace.check(g.sessionTimeout)
	})
	if !ok {
		return code
	}
	opts, err := g.prepare()
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
	client, err := g.dial(sig.ctx, opts)
	if err != nil {
		return sig.failed(log, err)
	}
	defer closeClient(client)
	if ch.timeout, ch.grace, err = sessionGrace(client, grace); err != nil {
		return a.usage("zkr elect", "%v", err)
	}

	// The selector runs each term on its own goroutine; results carries how
	// it ended to this one, which decides what zkr does next. Unbuffered: the
	// next term cannot start before this goroutine has taken the last one's
	// result, so the result after a forwarded signal is the interrupted
	// COMMAND's. quit frees a term that ends after zkr stopped listening.
	type result struct {
		out outcome
		err error
	}
	results := make(chan result)
	quit := make(chan struct{})
	if code, refused := kinds.refuse(sig.ctx, client, path, log); refused {
		return code
	}
	id := g.participantID()
	term := func(ctx context.Context, h *hold.Hold) error {
		token := h.Token()
		log.infof("leading %s as %s (fencing token %d)", path, id, token)
		g.holding(path, token, func() error { return context.Cause(ctx) })
		defer g.waiting(path)
		// The term belongs to the session it began on. After an expiry the
		// client silently makes a new session, on which a bare answer from
		// the server proves nothing: the check before COMMAND starts or
		// goes on finds the term's node owned by this very session, still
		// the client's (rule 3), as zkr lock does.
		session := client.Session().ID
		verify := func() error { return verifyNode(client, h.Path(), session, ch.timeout) }
		out, err := ch.run([]string{
			"ZKR_FENCING_TOKEN=" + strconv.FormatInt(token, 10),
			"ZKR_LOCK_PATH=" + path,
			"ZKR_PARTICIPANT_ID=" + id,
		}, held{ctx.Done(), func() error { return context.Cause(ctx) }, verify})
		select {
		case results <- result{out, err}:
		case <-quit:
		}
		return nil
	}
	// A campaign that fails (the queue node cannot be made, say) is only
	// reported to the handler; without --requeue nothing campaigns again, so
	// the loop below must hear of it or it would wait for ever.
	failed := make(chan error, 1)
	selOpts := []leader.SelectorOption{
		leader.WithParticipantID(id),
		leader.WithErrorHandler(func(err error) {
			log.printf("%v", err)
			if !requeue {
				select {
				case failed <- err:
				default: // one is enough to stop on
				}
			}
		}),
	}
	if requeue {
		selOpts = append(selOpts, leader.WithAutoRequeue())
	}
	g.waiting(path) // before Start: a term may begin at once
	sel, err := leader.NewSelector(client, path, term, selOpts...)
	if err != nil {
		log.printf("%v", err)
		return exitFailed
	}
	if err := sel.Start(sig.ctx); err != nil {
		// A signal while joining the queue ends Start; the queue is left
		// by Close either way.
		_ = sel.Close()
		return sig.failed(log, err)
	}
	log.infof("campaigning for %s as %s", path, id)
	stop := func(code int) int {
		close(quit)
		if err := sel.Close(); err != nil {
			log.printf("leave %s: %v", path, err)
		}
		return code
	}
	// finish is zkr's status after a term.
	finish := func(r result) int {
		switch {
		case errors.Is(r.err, errStopping):
			s, _ := sig.received()
			return signalCode(s)
		case r.err != nil:
			log.printf("%v", r.err)
			return r.out.code
		case r.out.lost != nil && !requeue:
			return exitLost
		}
		return r.out.code
	}
	for {
		select {
		case r := <-results:
			s, forwarded := sig.received()
			switch {
			case !requeue || r.err != nil || forwarded:
				return stop(finish(r))
			case s != nil: // COMMAND had ended when the signal came
				return stop(signalCode(s))
			}
			if r.out.lost != nil {
				log.infof("leadership lost; campaigning again")
			} else {
				log.infof("COMMAND exited %d; campaigning again", r.out.code)
			}
		case <-failed:
			return stop(exitFailed)
		case <-sig.ctx.Done():
			s, forwarded := sig.received()
			if forwarded {
				// COMMAND has the signal: its status is zkr's, once it ends.
				return stop(finish(<-results))
			}
			log.infof("%v while waiting to lead: left the queue", s)
			return stop(signalCode(s))
		}
	}
}
