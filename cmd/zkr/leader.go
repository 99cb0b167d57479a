package main

import (
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/recipes/leader"
)

const leaderHelp = `NAME
    zkr leader - show who leads a lock, latch or election path

SYNOPSIS
    zkr leader [OPTIONS] PATH

DESCRIPTION
    Prints the participant id of the current leader (or lock holder) of
    PATH on the first line, then the ids of the participants waiting behind
    it, in queue order, one per line: the whole queue, leader first, one
    participant a line. Works on the paths of zkr lock and zkr elect,
    and of Curator's InterProcessMutex, LeaderSelector and LeaderLatch (and
    this module's mutex, leader.Selector and leader.Latch).

    Participant ids are the data of each node: zkr's --id, or Curator's
    default (the host's address).

OPTIONS
    Only the global options.

GLOBAL OPTIONS
` + globalOptionsHelp + `
EXIT STATUS
    0      somebody leads; printed.
    1      nobody leads: PATH is empty or does not exist. Nothing printed.
    2      Usage error. Nothing was contacted.
    125    zkr failed: no connection to ZooKeeper, or a ZooKeeper error.
    130, 143
           interrupted.

ENVIRONMENT
` + globalEnvHelp + `
EXAMPLES
    $ zkr leader /services/scheduler
    host-a:4711
    host-b:913
    host-c:20211
    $ zkr leader /services/scheduler | head -1     # just the leader
`

func runLeader(a *app, g *globals, args []string) int {
	fs := newFlagSet("leader")
	g.register(fs)
	var path string
	code, ok := a.parseArgs("leader", leaderHelp, func() error {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return errors.New("missing PATH")
		}
		path = rest[0]
		if err := fs.Parse(rest[1:]); err != nil {
			return err
		}
		if len(fs.Args()) > 0 {
			return fmt.Errorf("unexpected argument %q after PATH", fs.Args()[0])
		}
		return checkPath(path)
	})
	if !ok {
		return code
	}
	opts, err := g.prepare()
	if err != nil {
		return a.usage("zkr leader", "%v", err)
	}
	log := a.logger("leader", g)
	sig := watchSignals(nil)
	defer sig.stop()
	client, err := g.dial(sig.ctx, opts)
	if err != nil {
		return sig.failed(log, err)
	}
	defer closeClient(client)
	ids, err := leader.Participants(sig.ctx, client, path)
	if err != nil {
		return sig.failed(log, err)
	}
	if len(ids) == 0 {
		log.printf("nobody leads %s", path)
		return exitNoLeader
	}
	for _, id := range ids {
		fmt.Fprintln(a.stdout, id)
	}
	return 0
}
