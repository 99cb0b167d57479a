package main

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

const membersHelp = `NAME
    zkr members - show the members of a group

SYNOPSIS
    zkr members [--watch] [-o json] [OPTIONS] PATH

DESCRIPTION
    Prints the members of the group at PATH, one a line, sorted by id: the
    member's id, then its payload. A group is Apache Curator's GroupMember
    layout, and this module's group.Member: one ephemeral node per member,
    PATH/ID, whose data is the member's payload (Curator's default: the
    host's address). The payload is printed as text, quoted (Go syntax)
    if it is empty, begins with a double quote, or holds spaces, control
    characters or bytes that are not UTF-8. zkr members only looks: it
    does not join.

    A PATH that does not exist is no group: zkr members says so on stderr
    and exits 1, as ls does of a missing file; an existing PATH without
    members is an empty group (0). --watch follows a missing PATH until
    members join under it. A PATH whose children are not members (a
    persistent node, or a lock's, latch's or read-write lock's node) is
    refused (status 2): zkr ls or zkr watch shows what it holds.

    With --watch, zkr prints a line per member there (joined), then one
    per change, until a signal stops it:

    joined  ID PAYLOAD    a member's node appeared
    changed ID PAYLOAD    a member set its payload
    left    ID PAYLOAD    a member's node went (its last payload)

    A member whose session ended and whose node is made again left and
    joined. When the view may be stale (zkr's link to ZooKeeper down, its
    session lost), zkr says so on stderr, and again once it is current,
    as zkr ls --watch. It watches, it never polls.

OPTIONS
    -w, --watch
           print the members, then every join, change and leave, until
           stopped by a signal.
` + outputHelp + `           For zkr members, one object:
           {"path":..,"members":[{"id":..,"payload":..,"session":"0x..",
            "since":..},..]}
           session is the member's ZooKeeper session, since when its node
           was made (RFC 3339). With --watch, one object per change:
           {"event":"joined"|"changed"|"left","time":..,"id":..,
            "payload":..,"session":..,"since":..}.

GLOBAL OPTIONS
` + globalOptionsHelp + `
EXIT STATUS
    0      shown (an empty group too).
    1      PATH does not exist (not with --watch): nothing printed, a
           line on stderr.
    2      Usage error (nothing was contacted), or PATH is not a group
           (see DESCRIPTION): nothing printed.
    125    zkr failed: no connection to ZooKeeper, or a ZooKeeper error.
    129, 130, 143
           SIGHUP, SIGINT (Ctrl-C) or SIGTERM: interrupted, or (--watch)
           stopped, which is how --watch ends.

ENVIRONMENT
` + globalEnvHelp + `    ZKR_OUTPUT           default for -o/--output (text or json).

EXAMPLES
    $ zkr members /groups/workers
    worker-1 10.0.0.7
    worker-2 10.0.0.9
    $ zkr members --watch /groups/workers        # joins and leaves, live
    $ zkr members -o json /groups/workers | jq -r '.members[].id'
`

func runMembers(a *app, g *globals, args []string) int {
	lc, code, ok := a.openLook("members", membersHelp, g, args, checkPath)
	if !ok {
		return code
	}
	defer lc.close()
	if !lc.watch {
		if code, ok := lc.present(lc.path, lc.path+" does not exist"); !ok {
			return code
		}
	}
	c, code, ok := lc.startCache(lc.path, cache.Children())
	if !ok {
		return code
	}
	defer func() { _ = c.Close() }()
	nodes, err := c.Children(lc.path)
	if err != nil {
		return lc.sig.failed(lc.log, err)
	}
	if err := notAGroup(lc.path, nodes); err != nil {
		lc.log.printf("%v", err)
		return exitUsage
	}
	if lc.watch {
		d := &childDiff{appeared: "joined", changed: "changed", went: "left", emit: printMember(a.stdout, lc.out.json())}
		return lc.follow(c, "the member list", d.event)
	}
	if lc.out.json() {
		list := make([]memberJSON, len(nodes))
		for i, n := range nodes {
			list[i] = newMemberJSON(n)
		}
		err = writeJSON(a.stdout, membersJSON{Path: lc.path, Members: list})
	} else {
		for _, n := range nodes {
			if _, err = fmt.Fprintln(a.stdout, framework.Base(n.Path), printable(string(n.Data))); err != nil {
				break
			}
		}
	}
	if err != nil {
		return lc.sig.failed(lc.log, err)
	}
	return 0
}

// notAGroup says why path's children are not a group's members: some are
// persistent, or a lock's, latch's or read-write lock's nodes.
func notAGroup(path string, nodes []cache.Node) error {
	var persistent, kids []string
	for _, n := range nodes {
		kids = append(kids, framework.Base(n.Path))
		if n.Stat.EphemeralOwner == 0 {
			persistent = append(persistent, framework.Base(n.Path))
		}
	}
	switch queued := queueNodes(kids, markLock, markRead, markWrite, markLatch); {
	case len(queued) > 0:
		return fmt.Errorf("%s is not a group: it holds a queue's nodes (%s; zkr ls %s shows them)", path, names(queued, 3), path)
	case len(persistent) > 0:
		return fmt.Errorf("%s is not a group: %s persistent, and a member is an ephemeral node (zkr watch --depth 1 %s shows them)", path, nodeList(persistent), path)
	}
	return nil
}

// nodeList names some children, saying "is" or "are".
func nodeList(kids []string) string {
	if len(kids) == 1 {
		return "its child " + kids[0] + " is"
	}
	return "its children " + names(kids, 3) + " are"
}

// membersJSON is zkr members -o json.
type membersJSON struct {
	Path    string       `json:"path"`
	Members []memberJSON `json:"members"`
}

// memberJSON is one member, or with --watch one change of one.
type memberJSON struct {
	Event   string `json:"event,omitempty"`
	Time    string `json:"time,omitempty"`
	ID      string `json:"id"`
	Payload string `json:"payload"`
	Session string `json:"session"`
	Since   string `json:"since"`
}

func newMemberJSON(n cache.Node) memberJSON {
	return memberJSON{ID: framework.Base(n.Path), Payload: string(n.Data),
		Session: fmt.Sprintf("0x%x", n.Stat.EphemeralOwner), Since: msTime(n.Stat.Ctime)}
}

// childDiff turns the events of a Children cache into a word per child
// that appeared, changed or went, handed to emit: it keeps the children
// it reported, so that a snapshot or an overflow (the whole view in place
// of the events missed) reports the difference. A child made again (a new
// czxid) went and appeared. An empty word is not reported.
type childDiff struct {
	appeared, changed, went string
	emit                    func(word string, n cache.Node) error
	known                   map[string]cache.Node // by name
}

func (d *childDiff) event(ev cache.Event) error {
	if d.known == nil {
		d.known = map[string]cache.Node{}
	}
	switch ev.Type {
	case cache.Created:
		return d.report(d.appeared, ev.Node)
	case cache.Changed:
		return d.report(d.changed, ev.Node)
	case cache.Deleted:
		return d.report(d.went, ev.Node)
	case cache.Snapshot, cache.Overflow:
		now := make(map[string]cache.Node, len(ev.Nodes))
		for _, n := range ev.Nodes {
			now[framework.Base(n.Path)] = n
		}
		for _, name := range slices.Sorted(maps.Keys(d.known)) {
			if n, ok := now[name]; !ok || n.Stat.Czxid != d.known[name].Stat.Czxid {
				if err := d.report(d.went, d.known[name]); err != nil {
					return err
				}
			}
		}
		for _, n := range ev.Nodes { // sorted by path, so by name
			old, ok := d.known[framework.Base(n.Path)]
			var err error
			switch {
			case !ok:
				err = d.report(d.appeared, n)
			case old.Stat.Mzxid != n.Stat.Mzxid:
				err = d.report(d.changed, n)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *childDiff) report(word string, n cache.Node) error {
	name := framework.Base(n.Path)
	if word == d.went {
		delete(d.known, name)
	} else {
		d.known[name] = n
	}
	if word == "" {
		return nil
	}
	return d.emit(word, n)
}

// printMember prints one change of a member.
func printMember(w io.Writer, asJSON bool) func(event string, n cache.Node) error {
	return func(event string, n cache.Node) error {
		if asJSON {
			m := newMemberJSON(n)
			m.Event, m.Time = event, now()
			return writeJSON(w, m)
		}
		_, err := fmt.Fprintf(w, "%-7s %s %s\n", event, framework.Base(n.Path), printable(string(n.Data)))
		return err
	}
}
