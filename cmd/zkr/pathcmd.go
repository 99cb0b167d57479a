package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
)

// lookCommand is what zkr leader and zkr ls share: one PATH to look at,
// --watch and --output, and a connected client that stops with close.
type lookCommand struct {
	path   string
	watch  bool
	out    *output
	log    *logger
	sig    *signals
	client *framework.Client
}

// openLook parses args for the subcommand name (checkPath vets PATH),
// connects, and returns the command; if ok is false, zkr exits with code.
// The caller defers close.
func (a *app) openLook(name, help string, g *globals, args []string, checkPath func(string) error) (lc *lookCommand, code int, ok bool) {
	return a.openLookSpec(name, help, g, args, lookSpec{check: checkPath})
}

// lookSpec is what a looking subcommand adds to, or takes from, the
// common PATH, --watch and --output.
type lookSpec struct {
	check    func(string) error     // vets PATH
	optional bool                   // PATH may be left out ("" then)
	always   bool                   // the subcommand always watches: no --watch
	flags    func(fs *flag.FlagSet) // registers the subcommand's own options
	validate func() error           // vets them, once parsed
}

// openLookSpec is openLook with the subcommand's own options.
func (a *app) openLookSpec(name, help string, g *globals, args []string, spec lookSpec) (lc *lookCommand, code int, ok bool) {
	fs := newFlagSet(name)
	g.register(fs)
	lc = &lookCommand{out: newOutput(), watch: spec.always}
	lc.out.register(fs)
	if !spec.always {
		fs.BoolVar(&lc.watch, "watch", false, "")
		fs.BoolVar(&lc.watch, "w", false, "")
	}
	if spec.flags != nil {
		spec.flags(fs)
	}
	code, ok = a.parseArgs(name, help, func() error {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) == 0 && !spec.optional {
			return errors.New("missing PATH")
		}
		if len(rest) > 0 {
			lc.path = rest[0]
			if err := fs.Parse(rest[1:]); err != nil {
				return err
			}
			if len(fs.Args()) > 0 {
				return fmt.Errorf("unexpected argument %q after %s", fs.Args()[0], lc.path)
			}
		}
		if err := lc.out.check(); err != nil {
			return err
		}
		if spec.validate != nil {
			if err := spec.validate(); err != nil {
				return err
			}
		}
		return spec.check(lc.path)
	})
	if !ok {
		return nil, code, false
	}
	opts, err := g.prepare()
	if err != nil {
		return nil, a.usage("zkr "+name, "%v", err), false
	}
	lc.log = a.logger(name, g)
	lc.sig = watchSignals(nil)
	if lc.client, err = g.dial(lc.sig.ctx, opts); err != nil {
		code = lc.sig.failed(lc.log, err)
		lc.sig.stop()
		return nil, code, false
	}
	return lc, 0, true
}

// present says whether path exists, for a one-shot look that must tell a
// missing path from an empty one, as ls does: if not, it says why on
// stderr and ok is false, with the status to exit with (1, or 125 when
// ZooKeeper could not say).
func (lc *lookCommand) present(path, why string) (code int, ok bool) {
	there, _, err := lc.client.Exists(lc.sig.ctx, path)
	switch {
	case err != nil:
		return lc.sig.failed(lc.log, err), false
	case !there:
		lc.log.printf("%s", why)
		return exitMissing, false
	}
	return 0, true
}

// close ends the session and the signal handling.
func (lc *lookCommand) close() {
	closeClient(lc.client)
	lc.sig.stop()
}

// staleView is what a --watch says of its view's freshness, on stderr:
// once when the view may have gone stale, and why, and once when it is
// current again. A view that is silently stale looks current.
type staleView struct {
	log  *logger // nil: say nothing (a terminal shows it on the screen)
	what string  // what is shown: "the queue", "the leader"
	why  string  // why the view may be stale; "" while it is current
}

// state takes a change of the session's state. It says whether the
// session is up again: whoever watches must look again (a new session has
// none of the old watches).
func (v *staleView) state(s conn.State) (up bool) {
	switch s {
	case conn.StateSuspended:
		v.stale("link to ZooKeeper down: " + v.what + " shown may be stale")
	case conn.StateLost:
		v.stale("session lost: " + v.what + " shown may be stale until a new session looks again")
	case conn.StateConnected, conn.StateReconnected, conn.StateReadOnly:
		return true
	}
	return false
}

// stale notes why the view may be stale, saying so if that is news.
func (v *staleView) stale(why string) {
	if why != v.why && v.log != nil {
		v.log.printf("%s", why)
	}
	v.why = why
}

// current notes that the view is current, saying so if it was not.
func (v *staleView) current() {
	if v.why != "" && v.log != nil {
		v.log.printf("link to ZooKeeper back: %s shown is current again", v.what)
	}
	v.why = ""
}
