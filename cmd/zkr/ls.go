package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/framework"
)

const lsHelp = `NAME
    zkr ls - show who holds and who waits on a lock, semaphore or election

SYNOPSIS
    zkr ls [--watch] [-o json] [OPTIONS] PATH

DESCRIPTION
    Shows the queue of PATH, holders first: a path of zkr lock, rlock,
    wlock, sem or elect, or of Curator's (and this module's) mutex,
    read-write lock, semaphore (InterProcessSemaphoreV2, and so
    SemaphoreMutex), LeaderLatch or LeaderSelector. The node names tell
    which: lock-, __READ__ and __WRIT__, locks/ and leases/, latch-.

    The first line names PATH, its kind (lock, rwlock, semaphore or
    latch) and how many hold and wait; then a line per node, in queue
    order:

    POS      place in the queue, from 1.
    ROLE     holds or waits (for a latch or an election, holds is leads);
             then, for a read-write lock, read or write; for a semaphore,
             lease: the leases held, then the acquirer waiting for room
             (it holds the semaphore's internal lock and has made its lease
             node), then those queued on the internal lock behind it.
    ID       the participant id, the node's data: zkr's --id, Curator's
             host address; quoted (Go syntax) if it is empty (a
             LeaderLatch's default), begins with a double quote, or holds
             spaces or control characters.
    SESSION  the ZooKeeper session that owns the node, in hex.
    TOKEN    for a holder, the fencing token of its hold: its node's czxid
             (what zkr gives COMMAND as ZKR_FENCING_TOKEN). - for a
             waiter, which holds nothing yet.
    FOR      how long the node has been there: now, by this machine's
             clock, less the node's creation time, by the server's. For a
             waiter, how long it has waited. For a holder it is best
             effort: ZooKeeper keeps no time of the grant, so FOR is how
             long it has held plus however long it waited before, exact
             only for a holder that never waited (as most semaphore
             leases). --watch counts a holder it saw waiting from the
             moment it saw the grant.

    Kinds of lock do not exclude each other: a path used by two at once
    is two queues. zkr ls shows the first of rwlock, latch, lock and
    semaphore that has nodes there, and names the others on its first
    line ("also semaphore nodes (not shown)") and in JSON ("also").
    Children that are no queue's nodes are not shown.

    A missing PATH, or one with no queue nodes, is an empty queue: lock
    directories are containers, which ZooKeeper removes once empty. A
    semaphore's maximum is not in its nodes: the leases shown as held are
    those whose acquirer has finished waiting.

    --watch shows the queue as it changes, until Ctrl-C. On a terminal it
    redraws the screen (ANSI escapes) at each change, and every second so
    that FOR counts on; elsewhere (a pipe, a file, TERM=dumb), or with
    -o json, it prints the queue again at each change only. It follows the
    changes with ZooKeeper watches on PATH (and a semaphore's locks/ and
    leases/): no polling of the server. When the queue shown may be stale
    (zkr's link to ZooKeeper down, its session lost, a look that failed),
    it says so, on the screen or else on stderr, and again once a look
    shows the queue current.

OPTIONS
    -w, --watch
           show the queue as it changes, until interrupted.
` + outputHelp + `           For zkr ls, one object per look:
           {"path":..,"kind":..,"time":..,"holding":N,"waiting":N,
            "queue":[{"pos":1,"role":"holds","side":"read","id":..,
            "session":"0x..","token":N,"created":..,"for_ms":N,
            "node":..},..]}
           plus "also":[kinds] for a path that holds other kinds too.
           side is read, write or lease (absent for a lock or a latch),
           token is null for a waiter (TOKEN -), node is the node's path
           below PATH, times are RFC 3339.

GLOBAL OPTIONS
` + globalOptionsHelp + `
EXIT STATUS
    0      shown (an empty queue too).
    2      Usage error. Nothing was contacted.
    125    zkr failed: no connection to ZooKeeper, or a ZooKeeper error.
    130, 143
           interrupted by SIGINT (Ctrl-C) or SIGTERM: the way --watch
           ends.

ENVIRONMENT
` + globalEnvHelp + `    ZKR_OUTPUT           default for -o/--output (text or json).

EXAMPLES
    $ zkr ls /jobs/billing
    /jobs/billing: lock, 1 holding, 2 waiting
    POS  ROLE   ID            SESSION            TOKEN       FOR
    1    holds  host-a:4711   0x10000a3c2f40001  4294967395  12m04s
    2    waits  host-b:913    0x10000a3c2f40002  -           3m10s
    3    waits  10.0.0.7      0x20000b1d0e30005  -           41s

    $ zkr ls --watch /pools/db                   # live, until Ctrl-C
    $ zkr ls -o json /jobs/billing | jq -r '.queue[] | select(.role == "waits") | .id'
`

func runLs(a *app, g *globals, args []string) int {
	lc, code, ok := a.openLook("ls", lsHelp, g, args, checkLsPath)
	if !ok {
		return code
	}
	defer lc.close()
	path, watch, out, log, sig, client := lc.path, lc.watch, lc.out, lc.log, lc.sig, lc.client
	l := &lister{client: client, path: path, out: out, w: a.stdout, log: log}
	if !watch {
		q, _, err := readQueue(sig.ctx, client, path, false)
		if err != nil {
			return sig.failed(log, err)
		}
		if err := l.print(q, false); err != nil {
			return sig.failed(log, err)
		}
		return 0
	}
	if !out.json() {
		if fd, ok := ansiTerminal(a.stdout); ok {
			l.screen = &screen{w: a.stdout, fd: fd}
		}
	}
	l.watch(sig.ctx)
	s, _ := sig.received()
	return signalCode(s)
}

// checkLsPath is checkPath without its refusal of the root: looking at
// the root harms nothing (and shows its children).
func checkLsPath(path string) error {
	if path == "/" {
		return nil
	}
	return checkPath(path)
}

// lister shows one path's queue, once or as it changes.
type lister struct {
	client *framework.Client
	path   string
	out    *output
	w      io.Writer
	log    *logger
	screen *screen // nil: no terminal to redraw

	last    *queue
	note    string               // shown under the header: why the queue may be stale
	view    *staleView           // --watch: whether the queue shown is current
	shown   string               // what was last printed, without the times
	roles   map[string]string    // node -> role at the last look
	granted map[string]time.Time // node -> when --watch saw it go from waits to holds
}

// print writes q once: a table, or a line of JSON.
func (l *lister) print(q *queue, stamp bool) error {
	now := time.Now()
	q.age(now)
	if l.out.json() {
		return writeJSON(l.w, q)
	}
	_, err := io.WriteString(l.w, strings.Join(q.table(now, stamp, 0), "\n")+"\n")
	return err
}

// age sets how long each node has waited or held, at now.
func (q *queue) age(now time.Time) {
	for i := range q.Nodes {
		q.Nodes[i].ForMS = max(now.Sub(q.Nodes[i].since), 0).Milliseconds()
	}
	if q.Nodes == nil {
		q.Nodes = []queueEntry{} // [] in JSON, not null
	}
}

// table is q for people: a header line, then a line per node. With
// maxLines > 0 it is cut to that many lines, saying how many nodes are
// left out.
func (q *queue) table(now time.Time, stamp bool, maxLines int) []string {
	head := q.Path + ": "
	switch {
	case q.Kind == kindNone && len(q.Others) > 0:
		head += "nobody holds or waits; not a queue: its children are " + names(q.Others, 10)
	case q.Kind == kindNone || len(q.Nodes) == 0:
		head += "nobody holds or waits"
	default:
		head += fmt.Sprintf("%s, %d holding, %d waiting", q.Kind, q.Holding, q.Waiting)
	}
	if len(q.Also) > 0 {
		also := make([]string, len(q.Also))
		for i, k := range q.Also {
			also[i] = string(k)
		}
		head += fmt.Sprintf("; also %s nodes (not shown), which do not exclude these", strings.Join(also, " and "))
	}
	if stamp {
		head += " (" + q.Time.Format(time.TimeOnly) + ")"
	}
	if len(q.Nodes) == 0 {
		return []string{head}
	}
	nodes := q.Nodes
	more := 0
	if maxLines > 0 && 2+len(nodes) > maxLines {
		keep := max(maxLines-3, 0)
		more = len(nodes) - keep
		nodes = nodes[:keep]
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "POS\tROLE\tID\tSESSION\tTOKEN\tFOR")
	for _, e := range nodes {
		role := e.Role
		if e.Side != "" {
			role += " " + e.Side
		}
		token := "-"
		if e.Token != nil {
			token = strconv.FormatInt(*e.Token, 10)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.Pos, role, printable(e.ID), e.Session, token, short(max(now.Sub(e.since), 0)))
	}
	tw.Flush()
	out := append([]string{head}, strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")...)
	if more > 0 {
		out = append(out, fmt.Sprintf("... and %d more", more))
	}
	return out
}

// names lists up to n names, then how many more.
func names(kids []string, n int) string {
	if len(kids) <= n {
		return strings.Join(kids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(kids[:n], ", "), len(kids)-n)
}

// printable is a participant id (or data) as zkr prints it: quoted if it
// is empty, begins with a quote (so that it cannot pass for a quoted one),
// has spaces, or anything a terminal would act on.
func printable(id string) string {
	if id != "" && id[0] != '"' && utf8.ValidString(id) && !strings.ContainsFunc(id, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || !unicode.IsPrint(r)
	}) {
		return id
	}
	return strconv.Quote(id)
}

// short is a duration in at most two units: 42s, 3m07s, 2h05m, 4d03h.
func short(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
}
