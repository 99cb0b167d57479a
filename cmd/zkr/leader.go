package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes"
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
    this module's mutex, leader.Selector and leader.Latch). A path that
    holds other nodes (a semaphore's, a read-write lock's, or no queue's,
    as /zookeeper), or the nodes of two of those recipes at once, which do
    not exclude each other, is refused (status 2): zkr ls shows what it
    holds.

    Participant ids are the data of each node: zkr's --id, or Curator's
    default: the host's address for a mutex or a LeaderSelector, none for
    a LeaderLatch. An id is printed as zkr ls prints it: as it is, or
    quoted (Go syntax) if it is empty, begins with a double quote, or
    holds spaces or characters a terminal would act on. So Curator's
    default id, empty, is shown as "", and nobody leading as no line at
    all (status 1), or with --watch as an empty line.

    With --watch, zkr follows the leader instead: one line with the
    leader's id now, then one line per change (an empty line when nobody
    leads), until a signal stops it. A change is a new term: another
    participant, or the same one queued anew. While zkr's own link to
    ZooKeeper is down, or its session lost, it prints nothing on stdout and
    says on stderr that the leader shown may be stale; once back, it says
    that it is current again, and prints a line only if the leader changed
    meanwhile. It watches, it never polls.

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
    2      Usage error (nothing was contacted), or PATH is not an
           election (see DESCRIPTION): nothing printed.
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
	q, _, err := readQueue(sig.ctx, client, path, false)
	if err != nil {
		return sig.failed(log, err)
	}
	if err := notAnElection(q); err != nil {
		log.printf("%v", err)
		return exitUsage
	}
	if watch {
		return watchLeader(a, log, sig, client, path, out.json())
	}
	ids := make([]string, len(q.Nodes))
	for i, e := range q.Nodes {
		ids[i] = e.ID
	}
	var now leader.Leadership
	if len(q.Nodes) > 0 {
		e := q.Nodes[0]
		now = leader.Leadership{ID: e.ID, Node: framework.Join(path, e.Node), Token: e.czxid, Since: e.Created}
	}
	switch {
	case out.json():
		if err := printLeaderJSON(a.stdout, path, now, &ids); err != nil {
			return sig.failed(log, err)
		}
	default:
		for _, id := range ids {
			fmt.Fprintln(a.stdout, printable(id))
		}
	}
	if !now.HasLeader() {
		log.printf("nobody leads %s", path)
		return exitNoLeader
	}
	return 0
}

// notAnElection says why zkr leader cannot answer for q: its nodes are
// another recipe's, whose first node leads nothing, or of no recipe at
// all, or of two kinds, which do not exclude each other.
func notAnElection(q *queue) error {
	switch {
	case q.Kind == kindNone && len(q.Others) > 0:
		return fmt.Errorf("%s is not an election: its children are %s, no queue's nodes", q.Path, names(q.Others, 10))
	case len(q.Also) > 0:
		kinds := []string{string(q.Kind)}
		for _, k := range q.Also {
			kinds = append(kinds, string(k))
		}
		return fmt.Errorf("%s holds %s nodes, which do not exclude each other: not one election (zkr ls %s shows them)", q.Path, strings.Join(kinds, " and "), q.Path)
	case q.Kind == kindRWLock, q.Kind == kindSemaphore && len(q.Nodes) > 0:
		return fmt.Errorf("%s holds %s nodes, not an election's (zkr ls %s shows who holds)", q.Path, q.Kind, q.Path)
	}
	return nil
}

// watchLeader prints the leader, then every change, until a signal or an
// error that waiting cannot cure ends the stream. While the link to
// ZooKeeper is down, the observer is silent: stderr says that the leader
// shown may be stale, and when it is current again.
func watchLeader(a *app, log *logger, sig *signals, client *framework.Client, path string, asJSON bool) int {
	sub := client.Subscribe()
	defer func() { sub.Close() }()
	obs, err := leader.Observe(sig.ctx, client, path)
	if err != nil {
		return sig.failed(log, err)
	}
	defer func() { obs.Close() }()
	states := sub.Changes()
	view := &staleView{log: log, what: "the leader"}
	nobody := false // the last line said nobody leads
	var last leader.Leadership
	printed := false
	for {
		var now leader.Leadership
		select {
		case ev, open := <-states:
			if !open && errors.Is(sub.Err(), zkrecipes.ErrFellBehind) {
				// Held back (by stdout, say) and told so: the state as
				// it stands comes first again.
				sub.Close()
				sub = client.Subscribe()
				states = sub.Changes()
				continue
			}
			if !open {
				states = nil // the client closed: so does the observer
			} else if view.state(ev.State) {
				// The observer looks again now, and prints a line if
				// the leader changed meanwhile.
				view.current()
			}
			continue
		case leads, open := <-obs.Changes():
			if !open && errors.Is(obs.Err(), zkrecipes.ErrFellBehind) {
				// Held back by stdout, and told so: observing again
				// starts with the leader as it stands, printed only if
				// it is not the last line's.
				obs.Close()
				if obs, err = leader.Observe(sig.ctx, client, path); err != nil {
					return sig.failed(log, err)
				}
				continue
			}
			if !open {
				return sig.failed(log, obs.Err())
			}
			if leads.Stale != nil || (printed && leads.HasLeader() && leads.Node == last.Node && leads.Token == last.Token) {
				// The link's state is said on stderr (states); the same
				// term current again is no new line.
				continue
			}
			now = leads
		}
		if now.HasLeader() && len(queueNodes([]string{framework.Base(now.Node)}, markLock, markLatch)) == 0 {
			// The observer takes any child for a contender; a semaphore's
			// directory, left beside an election, is none.
			now = leader.Leadership{}
		}
		if !now.HasLeader() && nobody {
			continue
		}
		nobody = !now.HasLeader()
		last, printed = now, true
		if asJSON {
			err = printLeaderJSON(a.stdout, path, now, nil)
		} else {
			// An empty line when nobody leads; an empty id is "".
			id := ""
			if now.HasLeader() {
				id = printable(now.ID)
			}
			_, err = fmt.Fprintln(a.stdout, id)
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
