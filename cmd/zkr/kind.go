package main

import (
	"context"
	"flag"
	"slices"
	"strings"

	"github.com/zkrecipes/zkrecipes/framework"
)

// Kinds of lock do not exclude each other: a zkr lock and a semaphore
// lease on one path both hold at once (in Curator too, node for node). zkr
// knows the kind it is asked for, so before it queues it looks at what the
// path holds and refuses another kind's.

const anyKindHelp = `    --any-kind
           queue on PATH even if it holds nodes of another kind of lock
           (another of lock or elect, rlock and wlock, sem, or a
           LeaderLatch), which does not exclude this one, nor this one
           it. Without it, zkr refuses such a PATH (status 2) before it
           queues.
`

// heldKinds is the kind of queue each subcommand that holds makes.
var heldKinds = map[string]queueKind{
	"lock":  kindLock,
	"rlock": kindRWLock,
	"wlock": kindRWLock,
	"sem":   kindSemaphore,
	"elect": kindLock, // a LeaderSelector is a mutex
}

// kindWords name what a subcommand holds, for the refusal.
var kindWords = map[string]string{
	"lock":  "a lock",
	"rlock": "a read lock",
	"wlock": "a write lock",
	"sem":   "a semaphore lease",
	"elect": "leadership",
}

// kindCheck is --any-kind, and the look it turns off.
type kindCheck struct {
	name string // the subcommand
	any  bool
}

// newKindCheck registers --any-kind on fs for subcommand name.
func newKindCheck(fs *flag.FlagSet, name string) *kindCheck {
	k := &kindCheck{name: name}
	fs.BoolVar(&k.any, "any-kind", false, "")
	return k
}

// refuse looks at what path holds and, if it holds nodes of another kind,
// says so and returns the status to exit with. A look that fails is no
// refusal: the queueing that follows meets the same trouble (a signal,
// --timeout, no permission) and reports it as it always has. Nodes that
// another kind makes after the look are not seen.
func (k *kindCheck) refuse(ctx context.Context, c *framework.Client, path string, log *logger) (code int, refused bool) {
	if k.any {
		return 0, false
	}
	l, err := readLayout(path, func(dir string) ([]string, error) {
		kids, _, err := listDir(ctx, c, dir, false)
		return kids, err
	})
	if err != nil {
		log.infof("could not look at what %s holds: %v", path, err)
		return 0, false
	}
	others := slices.DeleteFunc(l.kinds, func(q queueKind) bool { return q == heldKinds[k.name] })
	if len(others) == 0 {
		return 0, false
	}
	kinds := make([]string, len(others))
	for i, q := range others {
		kinds[i] = string(q)
	}
	log.printf("%s holds %s nodes (zkr ls %s shows them), which %s there would not exclude, nor they it: pick another path, or give --any-kind to queue anyway",
		path, strings.Join(kinds, " and "), path, kindWords[k.name])
	return exitUsage, true
}
