package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

const watchHelp = `NAME
    zkr watch - print the changes of a node, its children or a subtree

SYNOPSIS
    zkr watch [--depth N | --children] [--no-data] [-o json] [OPTIONS] PATH

DESCRIPTION
    Follows PATH and the nodes under it (the module's cache, as Curator's
    CuratorCache and TreeCache) and prints what is there, then every
    change, one line each, until a signal stops it:

    snapshot PATH vVERSION DATA    a node there when zkr started
    created  PATH vVERSION DATA    a node made
    changed  PATH vVERSION DATA    a node's data set (VERSION is its new
                                   data version)
    deleted  PATH vVERSION DATA    a node gone (as last seen)
    overflow PATH vVERSION DATA    zkr fell behind and missed changes:
                                   the whole view follows, one line a node
                                   (stderr says so first)

    DATA is the node's data as text, quoted (Go syntax) if it is empty,
    begins with a double quote, or holds spaces, control characters or
    bytes that are not UTF-8. Nodes
    of the snapshot come sorted by path; changes come in the order
    ZooKeeper made them, one node at a time. Two changes of a node between
    two reads show as one, with the later state (watches fire once); a
    node deleted and made again is a deleted and a created, never a
    changed; a view never goes back to an older state.

    When the view may be stale (zkr's link to ZooKeeper down, its session
    lost), zkr says so on stderr, and again once it has read the view
    again and printed the changes that bring it up to date, as zkr ls
    --watch. A missing PATH is an empty view, until it is made.

    Each node followed costs a ZooKeeper watch (two above the depth) and
    some memory in zkr: follow a subtree of thousands of nodes with
    --depth or --children.

OPTIONS
    --depth N
           follow PATH and the nodes down to N levels below it (0: PATH
           alone). Without it (and without --children), the whole subtree.
    --children
           follow PATH's children, not PATH itself (Curator's
           PathChildrenCache).
    --no-data
           keep and print the nodes' Stats, not their data (DATA is
           left out; a change of the data is still a changed).
` + outputHelp + `           For zkr watch, one object per event, "type" first:
           {"type":"snapshot","time":..,"nodes":[NODE,..]} then
           {"type":"created"|"changed"|"deleted","time":..,"node":NODE}
           (changed has "old":NODE too), {"type":"overflow",..,"nodes":
           [..]}, {"type":"stale","reason":..} and {"type":"current"}.
           NODE is {"path":..,"data":..,"stat":{"czxid":N,"mzxid":N,
           "version":N,"ephemeral_owner":"0x..","ctime":..,"mtime":..,
           "data_length":N,"num_children":N}}: data as a string if it is
           UTF-8 text, else "data_base64"; ephemeral_owner only for an
           ephemeral node; times in RFC 3339.

GLOBAL OPTIONS
` + globalOptionsHelp + `
EXIT STATUS
    2      Usage error. Nothing was contacted.
    125    zkr failed: no connection to ZooKeeper, or a ZooKeeper error
           (no permission to read PATH, for one).
    129, 130, 143
           SIGHUP, SIGINT (Ctrl-C) or SIGTERM: the way zkr watch ends.

ENVIRONMENT
` + globalEnvHelp + `    ZKR_OUTPUT           default for -o/--output (text or json).

EXAMPLES
    $ zkr watch /config/app
    snapshot /config/app v3 "replicas=3"
    changed  /config/app v4 "replicas=5"
    $ zkr watch --children /services/api         # instances come and go
    $ zkr watch -o json --depth 2 /jobs | jq -c 'select(.type == "created") | .node.path'
`

func runWatch(a *app, g *globals, args []string) int {
	var depth int
	var children, noData bool
	depthSet := false
	lc, code, ok := a.openLookSpec("watch", watchHelp, g, args, lookSpec{
		check:  checkPath,
		always: true,
		flags: func(fs *flag.FlagSet) {
			fs.Func("depth", "", func(v string) error {
				if _, err := fmt.Sscan(v, &depth); err != nil || depth < 0 || fmt.Sprint(depth) != v {
					return fmt.Errorf("want a number of levels, 0 or more, not %q", v)
				}
				depthSet = true
				return nil
			})
			fs.BoolVar(&children, "children", false, "")
			fs.BoolVar(&noData, "no-data", false, "")
		},
		validate: func() error {
			if depthSet && children {
				return errors.New("--depth and --children: give one")
			}
			return nil
		},
	})
	if !ok {
		return code
	}
	defer lc.close()
	shape := cache.Tree(cache.AnyDepth)
	switch {
	case children:
		shape = cache.Children()
	case depthSet:
		shape = cache.Tree(depth)
	}
	var opts []cache.Option
	if noData {
		opts = append(opts, cache.WithoutData())
	}
	c, code, ok := lc.startCache(lc.path, shape, opts...)
	if !ok {
		return code
	}
	defer func() { _ = c.Close() }()
	p := &eventPrinter{w: a.stdout, json: lc.out.json(), noData: noData, log: lc.log}
	return lc.follow(c, "the view", p.print)
}

// eventPrinter writes the cache's events, as lines or JSON.
type eventPrinter struct {
	w      io.Writer
	json   bool
	noData bool
	log    *logger
}

// eventJSON is one event of zkr watch -o json.
type eventJSON struct {
	Type   string      `json:"type"`
	Time   string      `json:"time"`
	Node   *nodeJSON   `json:"node,omitempty"`
	Old    *nodeJSON   `json:"old,omitempty"`
	Nodes  *[]nodeJSON `json:"nodes,omitempty"` // [] for an empty view, absent for others
	Reason string      `json:"reason,omitempty"`
}

func (p *eventPrinter) print(ev cache.Event) error {
	if p.json {
		return p.printJSON(ev)
	}
	switch ev.Type {
	case cache.Snapshot, cache.Overflow:
		if ev.Type == cache.Overflow {
			p.log.printf("fell behind: changes were missed; the whole view follows (%d nodes)", len(ev.Nodes))
		}
		for _, n := range ev.Nodes {
			if err := p.line(ev.Type.String(), n); err != nil {
				return err
			}
		}
	case cache.Created, cache.Changed, cache.Deleted:
		return p.line(ev.Type.String(), ev.Node)
	}
	return nil
}

// line writes one node's line: the event, padded so that paths align.
func (p *eventPrinter) line(kind string, n cache.Node) error {
	l := fmt.Sprintf("%-8s %s v%d", kind, n.Path, n.Stat.Version)
	if !p.noData {
		l += " " + printable(string(n.Data))
	}
	_, err := fmt.Fprintln(p.w, l)
	return err
}

func (p *eventPrinter) printJSON(ev cache.Event) error {
	out := eventJSON{Type: ev.Type.String(), Time: now()}
	switch ev.Type {
	case cache.Snapshot, cache.Overflow:
		nodes := make([]nodeJSON, len(ev.Nodes))
		for i, n := range ev.Nodes {
			nodes[i] = p.node(n)
		}
		out.Nodes = &nodes
	case cache.Created, cache.Deleted:
		n := p.node(ev.Node)
		out.Node = &n
	case cache.Changed:
		n, o := p.node(ev.Node), p.node(ev.Old)
		out.Node, out.Old = &n, &o
	case cache.Stale:
		out.Reason = staleReason(ev.Err, "the view")
	}
	return writeJSON(p.w, out)
}

func (p *eventPrinter) node(n cache.Node) nodeJSON {
	j := newNodeJSON(n)
	if p.noData {
		j.Data, j.DataBase64 = nil, nil
	}
	return j
}
