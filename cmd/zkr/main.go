// Command zkr is the distributed flock: it runs a command while holding a
// ZooKeeper lock, read or write lock, semaphore lease or leadership, with the
// fencing token in the command's environment, and stops the command the
// moment what it holds can no longer be trusted. It also shows who leads a
// lock path and who waits, follows nodes as they change, shows a group's
// members and discovery's services, and starts a throwaway server for
// development.
// (The benchmarks that were zkr bench are cmd/zkr-bench.)
//
// Run zkr --help, or zkr SUBCOMMAND --help, for the manual.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Exit statuses of zkr itself. A COMMAND's own status passes through
// unchanged, so these sit where commands rarely exit: next to timeout(1)'s
// 124-127, which they mean the same as.
const (
	exitNoLeader = 1   // zkr leader: nobody leads
	exitMissing  = 1   // zkr members, services: PATH does not exist
	exitUsage    = 2   // bad flag, path or argument; nothing was contacted
	exitLost     = 122 // the hold was lost while COMMAND ran; COMMAND was stopped
	exitTimeout  = 124 // --timeout passed before the hold was granted
	exitFailed   = 125 // zkr failed: no connection, ZooKeeper error
	exitNoExec   = 126 // COMMAND exists but cannot be run
	exitNotFound = 127 // COMMAND not found
)

// signalCode is the status for a zkr that gave up on signal s, as a shell
// reports a command killed by it.
func signalCode(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return exitFailed
}

const exitStatusHeld = "EXIT STATUS\n" + exitStatusHeldBody

const exitStatusHeldBody = `    N      COMMAND's own exit status (128+S if a signal S killed it).
    0      Without COMMAND: released on SIGINT, SIGTERM, SIGQUIT or SIGHUP,
           or at the end of stdin.
    1      -n (or -w 0) found the hold taken (-E changes it).
    2      Usage error: bad option, path or argument (a PATH in /zookeeper,
           ZooKeeper's own tree, or below it, under --namespace or a
           chroot too). Nothing was contacted.
           Or PATH holds nodes of another kind of lock, which would not
           exclude this one (see --any-kind): looked at, nothing made.
           Or, without COMMAND, stdin was at its end at start (nothing
           contacted), or ended before the hold was granted (zkr left
           the queue): nothing held.
    122    The hold was lost while COMMAND ran (link to ZooKeeper down for
           2/3 of the session timeout, session expired, or --lease about to
           run out); COMMAND was sent SIGTERM, then SIGKILL after --grace.
           Or COMMAND was killed on resume (fg, bg) because the hold was
           lost while it was stopped. Or, without COMMAND, the hold was lost
           (or --lease ran out) while held.
    124    --timeout passed before the hold was granted, ZooKeeper answering:
           the hold was busy. COMMAND did not run.
    125    zkr failed: no connection to ZooKeeper, or a ZooKeeper error; or
           --timeout passed while connecting, or while the link to
           ZooKeeper was down (ZooKeeper down is not a busy hold). COMMAND
           did not run.
    126    COMMAND cannot be executed.
    127    COMMAND not found.
    129, 130, 131, 143
           SIGHUP, SIGINT, SIGQUIT or SIGTERM reached zkr while it waited; it
           gave up and left nothing behind. COMMAND did not run. (Once COMMAND runs,
           those signals are forwarded to it, and its status is zkr's.)
`

const mainHelp = `NAME
    zkr - run a command under a ZooKeeper lock, lease or leadership

SYNOPSIS
    zkr [GLOBAL OPTIONS] SUBCOMMAND [OPTIONS] ARGS...

    zkr lock   [OPTIONS] PATH [-- COMMAND [ARGS...] | -c 'COMMAND LINE']
    zkr rlock  [OPTIONS] PATH [-- COMMAND [ARGS...] | -c 'COMMAND LINE']
    zkr wlock  [OPTIONS] PATH [-- COMMAND [ARGS...] | -c 'COMMAND LINE']
    zkr sem    --max N [OPTIONS] PATH [-- COMMAND [ARGS...] | -c '...']
    zkr elect  [--requeue] [OPTIONS] PATH -- COMMAND [ARGS...]
    zkr leader [--watch] [-o json] [OPTIONS] PATH
    zkr ls     [--watch] [-o json] [OPTIONS] PATH
    zkr watch  [--depth N | --children] [-o json] [OPTIONS] PATH
    zkr members [--watch] [-o json] [OPTIONS] PATH
    zkr services [--base PATH] [--watch] [-o json] [OPTIONS] [NAME]
    zkr dev    [--port P]
    zkr version
    zkr completion bash|zsh|fish
    zkr help   [SUBCOMMAND]

DESCRIPTION
    zkr is flock(1) for a cluster. It takes a lock in ZooKeeper, runs COMMAND,
    and releases the lock when COMMAND ends; zkr exits with COMMAND's status.
    Locks are Apache Curator's recipes, node for node, so zkr queues fairly
    (FIFO) with Java and Go services that use the same paths.

    COMMAND gets a fencing token in its environment (ZKR_FENCING_TOKEN): a
    number that grows from each holder to the next. Pass it to whatever
    COMMAND writes to, and have that refuse tokens lower than the highest it
    has seen; that is what makes a lock safe against a paused holder.

    If the lock can no longer be trusted while COMMAND runs (no answer from
    ZooKeeper for 2/3 of the session timeout, before the server can give the
    lock to anyone else), zkr stops COMMAND and everything it started:
    SIGTERM, then SIGKILL after --grace, which always ends before anyone
    else can be granted the lock. A small supervisor (zkr itself, named
    zkr-supervisor) sits between zkr and COMMAND: if zkr is killed (kill -9,
    killall -9 zkr, the OOM killer), stopped (kill -STOP) or stops
    answering, it kills COMMAND's whole process tree, daemons in sessions
    of their own included. When COMMAND exits, whatever it left running is
    stopped too, before the lock is released.

    On a terminal, COMMAND is the terminal's foreground job whenever zkr's
    job is (at start, and after fg): it reads the terminal, Ctrl-C reaches
    it, and Ctrl-Z stops it (and everything it started) and gives the
    terminal back to the shell. fg or bg continue it only if a fresh
    answer from ZooKeeper shows the hold intact; otherwise COMMAND is
    killed and zkr exits 122. A stopped COMMAND never runs again once its
    hold is lost, and a SIGCONT that zkr did not send (kill -CONT, a
    debugger) stops it again until fg or bg. zkr is stopped with COMMAND,
    so nothing keeps its session alive: a job stopped for about 2/3 of the
    session timeout has lost its hold, and the supervisor kills COMMAND's
    tree then, without waiting for fg or bg, which report 122. Started in
    the background (&), zkr keeps the hold while a COMMAND that reads the
    terminal waits (SIGTTIN); fg checks the hold and continues COMMAND with
    the terminal.

    Where no shell can stop and continue zkr's job (script -c, ssh -t,
    xterm -e, docker run -it: zkr's process group is orphaned), Ctrl-Z
    stops COMMAND alone: zkr keeps the hold and takes the terminal back,
    and Ctrl-C then ends COMMAND. A signal zkr passes on to a stopped
    COMMAND (SIGINT, SIGTERM, SIGHUP), in any case, makes zkr check the
    hold afresh and continue COMMAND to act on it, or kill it (122).
    Without a terminal (cron, systemd, CI), a COMMAND stopped with kill
    -STOP keeps its hold while zkr watches it, kill -CONT continues it,
    and a loss kills it.

    zkr can signal only processes it may signal: what COMMAND starts as
    another user (sudo, setuid programs) cannot be stopped or killed by zkr,
    and may outlive the hold.

    lock      exclusive lock (Curator's InterProcessMutex)
    rlock     shared side of a read-write lock (InterProcessReadWriteLock)
    wlock     exclusive side of the same read-write lock
    sem       one lease of a counting semaphore (InterProcessSemaphoreV2)
    elect     leader election (LeaderSelector): COMMAND runs while leading
    leader    print who leads a lock, latch or selector path, and the queue;
              --watch prints every change
    ls        show who holds and who waits on a path, since when, with
              their sessions and fencing tokens
    watch     print a node's, its children's or a subtree's changes as
              they happen (the module's cache)
    members   show the members of a group (Curator's GroupMember);
              --watch prints joins and leaves
    services  show the services and instances of service discovery
              (curator-x-discovery); --watch prints every change
    dev       start a throwaway local ZooKeeper for trying zkr out
    version   print zkr's version (also zkr --version)
    completion
              print a completion script for bash, zsh or fish
    help      show the manual of a subcommand (as SUBCOMMAND --help)

OPTIONS
` + globalOptionsHelp + `
EXIT STATUS
    1      zkr leader: nobody leads PATH. zkr members, zkr services: PATH
           (or the base path, or NAME) does not exist.
` + exitStatusHeldBody + `
ENVIRONMENT
    ZKR_CONNECT (or ZK_CONNECT), ZKR_SESSION_TIMEOUT, ZKR_DIAL_TIMEOUT,
    ZKR_NAMESPACE, ZKR_AUTH, ZKR_AUTH_FILE, ZKR_ACL, ZKR_TLS_CA, ZKR_TLS_CERT,
    ZKR_TLS_KEY, ZKR_ID, ZKR_VERBOSE, ZKR_LOG_LEVEL, ZKR_LOG_FORMAT: the
    global options (see OPTIONS).
    ZKR_OUTPUT: -o/--output of leader, ls, watch, members and services
    (text or json).
    COMMAND gets ZKR_FENCING_TOKEN, ZKR_LOCK_PATH, ZKR_LOCK_NODE (not for
    elect) and ZKR_PARTICIPANT_ID; see each subcommand.

EXAMPLES
    zkr dev --port 2181 &                      # a server at 127.0.0.1:2181
    zkr lock /jobs/billing -- ./billing-run    # one at a time, cluster-wide
    zkr lock --timeout 30s /jobs/billing -- ./billing-run || echo $?
    zkr sem --max 3 /pools/db -- ./migrate     # at most three at once
    zkr elect --requeue /services/scheduler -- ./scheduler
    zkr leader /services/scheduler
    zkr ls /jobs/billing                       # who holds, who waits
    zkr ls --watch /jobs/billing               # the same, live
    zkr watch /config/app                      # every change of a node
    zkr members --watch /groups/workers        # joins and leaves
    zkr services billing                       # a service's instances
    source <(zkr completion bash)              # Tab completion
`

// app is one run of zkr: where it writes.
type app struct {
	stdout, stderr io.Writer
}

// subcommand is one of zkr's verbs.
type subcommand struct {
	help string
	run  func(a *app, g *globals, args []string) int
}

func subcommands() map[string]subcommand {
	return map[string]subcommand{
		"lock":       {lockHelp, runLock},
		"rlock":      {rlockHelp, runRLock},
		"wlock":      {wlockHelp, runWLock},
		"sem":        {semHelp, runSem},
		"elect":      {electHelp, runElect},
		"leader":     {leaderHelp, runLeader},
		"dev":        {devHelp, runDev},
		"ls":         {lsHelp, runLs},
		"watch":      {watchHelp, runWatch},
		"members":    {membersHelp, runMembers},
		"services":   {servicesHelp, runServices},
		"completion": {completionHelp, runCompletion},
		"version":    {versionHelp, runVersion},
	}
}

func main() {
	if spec, ok := os.LookupEnv(supervisorEnv); ok {
		os.Exit(supervise(spec, os.Args[1:]))
	}
	a := &app{stdout: os.Stdout, stderr: os.Stderr}
	os.Exit(a.main(os.Args[1:]))
}

// main parses the global options, then hands the rest to the subcommand.
func (a *app) main(args []string) int {
	g := defaultGlobals()
	g.stderr = a.stderr
	fs := newFlagSet("zkr")
	g.register(fs)
	var version bool
	fs.BoolVar(&version, "version", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(a.stdout, mainHelp)
			return 0
		}
		return a.usage("zkr", "%v", err)
	}
	rest := fs.Args()
	if version {
		return runVersion(a, g, rest)
	}
	if len(rest) == 0 {
		return a.usage("zkr", "missing subcommand")
	}
	name, rest := rest[0], rest[1:]
	cmds := subcommands()
	if name == "help" {
		return a.help(cmds, rest)
	}
	cmd, ok := cmds[name]
	if !ok {
		if hint, moved := movedSubcommands[name]; moved {
			return a.usage("zkr", "%s", hint)
		}
		return a.usage("zkr", "%s", unknownSubcommand(name, cmds))
	}
	return cmd.run(a, g, rest)
}

// movedSubcommands are former subcommands, and where they went: a script
// that runs one learns it from the error.
var movedSubcommands = map[string]string{
	"bench": "bench is a command of its own now, zkr-bench: go install github.com/zkrecipes/zkrecipes/cmd/zkr-bench@latest",
}

func (a *app) help(cmds map[string]subcommand, args []string) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(a.stdout, mainHelp)
	case len(args) > 1:
		return a.usage("zkr help", "one subcommand at a time")
	default:
		cmd, ok := cmds[args[0]]
		if !ok {
			if hint, moved := movedSubcommands[args[0]]; moved {
				return a.usage("zkr help", "%s", hint)
			}
			return a.usage("zkr help", "%s", unknownSubcommand(args[0], cmds))
		}
		fmt.Fprint(a.stdout, cmd.help)
	}
	return 0
}

// unknownSubcommand says that name is none of cmds, and which of them it
// may be a slip for: those at the least edit distance, if that is small for
// its length, and those it begins (3 letters at least) or nearly begins.
func unknownSubcommand(name string, cmds map[string]subcommand) string {
	msg := fmt.Sprintf("unknown subcommand %q", name)
	names := append(slices.Sorted(maps.Keys(cmds)), "help")
	limit := min(max(len(name)/3, 1), 2)
	var near []string
	for _, n := range names {
		common := 0
		for common < min(len(n), len(name)) && n[common] == name[common] {
			common++
		}
		if editDistance(name, n) <= limit || common >= 3 && common >= len(name)-2 {
			near = append(near, strconv.Quote(n))
		}
	}
	switch len(near) {
	case 0:
		return msg
	case 1:
		return msg + "; did you mean " + near[0] + "?"
	}
	return msg + "; did you mean " + strings.Join(near[:len(near)-1], ", ") + " or " + near[len(near)-1] + "?"
}

// editDistance is the optimal string alignment distance between a and b:
// the insertions, deletions, substitutions and swaps of two neighbours
// that turn one into the other, the slips of a typist.
func editDistance(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j].
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// usage reports a usage error on one line, as scripts and people both want,
// and returns its status.
func (a *app) usage(who, format string, args ...any) int {
	fmt.Fprintf(a.stderr, "%s: %s (see '%s --help')\n", who, fmt.Sprintf(format, args...), who)
	return exitUsage
}

// logger writes zkr's own messages to stderr, prefixed with the
// subcommand; info messages only with --verbose.
type logger struct {
	w       io.Writer
	prefix  string
	verbose bool
}

func (a *app) logger(name string, g *globals) *logger {
	return &logger{w: a.stderr, prefix: "zkr " + name + ": ", verbose: g.verbose}
}

func (l *logger) printf(format string, args ...any) {
	fmt.Fprintf(l.w, l.prefix+format+"\n", args...)
}

func (l *logger) infof(format string, args ...any) {
	if l.verbose {
		l.printf(format, args...)
	}
}
