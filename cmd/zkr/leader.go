package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
)

const leaderHelp = `NAME
    zkr leader - show who leads a lock, latch or election path

SYNOPSIS
    zkr leader [--watch] [-o json] [OPTIONS] PATH

DESCRIPTION
    Prints the participant id of the current leader (or lock holder) of
    PATH on the first line, then the ids of the participants waiting behind
    it, in queue order, one per line: the whole queue, leader first, one
    participant a line. Works on the paths of zkr lock and zkr elect,
    and of Curator's InterProcessMutex, LeaderSelector and LeaderLatch (and
    this module's mutex, leader.Selector and leader.Latch).

    Participant ids are the data of each node: zkr's --id, or Curator's
    default (the host's address).

    With --watch, zkr follows the leader instead: one line with the
    leader's id now, then one line per change (an empty line when nobody
    leads), until a signal stops it. A change is a new term: another
    participant, or the same one queued anew. While zkr's own link to
    ZooKeeper is down it prints nothing; once back, it prints a line only if
    the leader changed meanwhile. It watches, it never polls.

    With -o json, zkr prints one JSON object on one line instead:
    {"path": PATH, "leader": ..., "participants": [ids, in queue order]},
    where leader is null when nobody leads, else {"id", "node", "token",
    "since"}: the leader's id, its node (without --namespace), its fencing
    token (the node's czxid, as zkr elect gives COMMAND) and since when it
    leads, as best known (RFC 3339: when zkr saw the change, or the node's
    creation for a leader already leading when zkr first looked). With
    --watch, one such object a line, each without participants.

OPTIONS
    -w, --watch
           print the leader, then every change, until stopped by a signal.
` + outputHelp + `           For zkr leader, the object above.

GLOBAL OPTIONS
` + globalOptionsHelp + `
EXIT STATUS
    0      somebody leads; printed.
    1      nobody leads: PATH is empty or does not exist. Nothing printed
           (with -o json: the object, leader null). Not with --watch.
    2      Usage error. Nothing was contacted.
    125    zkr failed: no connection to ZooKeeper, or a ZooKeeper error
           (with --watch: one that waiting cannot cure, such as no read
           permission on PATH).
    129, 130, 143
           SIGHUP, SIGINT or SIGTERM: interrupted, or (--watch) stopped,
           which is how --watch ends.

ENVIRONMENT
` + globalEnvHelp + `    ZKR_OUTPUT           default for -o/--output (text or json).

EXAMPLES
    $ zkr leader /services/scheduler
    host-a:4711
    host-b:913
    host-c:20211
    $ zkr leader /services/scheduler | head -1     # just the leader
    $ zkr leader --watch /services/scheduler | while read -r id; do
    >     echo "leader now: ${id:-nobody}"; done
    $ zkr leader -o json /services/scheduler | jq .leader.token
`

func runLeader(a *app, g *globals, args []string) int {
	lc, code, ok := a.openLook("leader", leaderHelp, g, args, checkPath)
	if !ok {
		return code
	}
	defer lc.close()
	path, watch, out, log, sig, client := lc.path, lc.watch, lc.out, lc.log, lc.sig, lc.client
	if watch {
		return watchLeader(a, log, sig, client, path, out.json())
	}
	ids, err := leader.Participants(sig.ctx, client, path)
	if err != nil {
		return sig.failed(log, err)
	}
	if !out.json() {
		if len(ids) == 0 {
			log.printf("nobody leads %s", path)
			return exitNoLeader
		}
		for _, id := range ids {
			fmt.Fprintln(a.stdout, id)
		}
		return 0
	}
	// The queue above, the leader's term from a first look of Observe: two
	// reads, as close together as they come.
	now, err := currentLeader(sig.ctx, client, path, g.connectTimeout)
	if err != nil {
		return sig.failed(log, err)
	}
	if err := printLeaderJSON(a.stdout, path, now, &ids); err != nil {
		return sig.failed(log, err)
	}
	if !now.HasLeader() {
		log.printf("nobody leads %s", path)
		return exitNoLeader
	}
	return 0
}

// watchLeader prints the leader, then every change, until a signal or an
// error that waiting cannot cure ends the stream.
func watchLeader(a *app, log *logger, sig *signals, client *framework.Client, path string, asJSON bool) int {
	obs, err := leader.Observe(sig.ctx, client, path)
	if err != nil {
		return sig.failed(log, err)
	}
	for now := range obs.Changes() {
		if asJSON {
			err = printLeaderJSON(a.stdout, path, now, nil)
		} else {
			_, err = fmt.Fprintln(a.stdout, now.ID) // "" when nobody leads
		}
		if err != nil { // stdout closed (the reader of a pipe is gone)
			return sig.failed(log, err)
		}
		if now.HasLeader() {
			log.infof("%s leads %s (token %d, since %s)", now.ID, path, now.Token, now.Since.Format(time.RFC3339))
		} else {
			log.infof("nobody leads %s", path)
		}
	}
	return sig.failed(log, obs.Err())
}

// currentLeader is Observe's first look, given at most timeout: the
// observer waits out a lost link, which a one-shot look must not.
func currentLeader(ctx context.Context, client *framework.Client, path string, timeout time.Duration) (leader.Leadership, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	obs, err := leader.Observe(ctx, client, path)
	if err != nil {
		return leader.Leadership{}, err
	}
	if now, ok := <-obs.Changes(); ok {
		return now, nil
	}
	if errors.Is(obs.Err(), context.DeadlineExceeded) {
		return leader.Leadership{}, fmt.Errorf("no answer from ZooKeeper about %s within %v", path, timeout)
	}
	return leader.Leadership{}, obs.Err()
}

// leaderJSON is one object of -o json. Participants is left out with
// --watch, which follows the leader alone.
type leaderJSON struct {
	Path         string      `json:"path"`
	Leader       *leaderTerm `json:"leader"`
	Participants *[]string   `json:"participants,omitempty"`
}

type leaderTerm struct {
	ID    string `json:"id"`
	Node  string `json:"node"`
	Token int64  `json:"token"`
	Since string `json:"since"`
}

// printLeaderJSON writes one object on one line.
func printLeaderJSON(w io.Writer, path string, now leader.Leadership, ids *[]string) error {
	v := leaderJSON{Path: path, Participants: ids}
	if ids != nil && *ids == nil {
		v.Participants = &[]string{} // [], not null: an empty queue
	}
	if now.HasLeader() {
		v.Leader = &leaderTerm{ID: now.ID, Node: now.Node, Token: now.Token,
			Since: now.Since.UTC().Format(time.RFC3339Nano)}
	}
	return writeJSON(w, v)
}
