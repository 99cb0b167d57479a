package main

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// printedLeader is what zkr leader -o json prints, as a reader decodes it.
type printedLeader struct {
	Path   string `json:"path"`
	Leader *struct {
		ID    string    `json:"id"`
		Node  string    `json:"node"`
		Token int64     `json:"token"`
		Since time.Time `json:"since"`
	} `json:"leader"`
	Participants *[]string `json:"participants"`
}

func decodeLeader(t *testing.T, line string) printedLeader {
	t.Helper()
	var v printedLeader
	require.NoError(t, json.Unmarshal([]byte(line), &v), "not JSON: %q", line)
	return v
}

// startLatch starts a latch of participant id on c, closed when t ends.
func startLatch(t *testing.T, c *framework.Client, path, id string) *leader.Latch {
	t.Helper()
	l, err := leader.NewLatch(c, path, leader.WithParticipantID(id))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	require.NoError(t, l.Start(context.Background()))
	return l
}

func awaitTerm(t *testing.T, l *leader.Latch) int64 {
	t.Helper()
	term, err := l.Await(testkit.Ctx(t, 30*time.Second))
	require.NoError(t, err)
	return term.Token()
}

func TestLeaderWatchPrintsALinePerChangeUntilSIGINT(t *testing.T) {
	cl, connect := server(t)
	obs := client(t, cl)
	a := startLatch(t, client(t, cl), "/watched", "a")
	awaitTerm(t, a)
	b := startLatch(t, client(t, cl), "/watched", "b")
	waitChildren(t, obs, "/watched", 2)

	p := start(t, args(connect, cmd("leader", "--watch", "/watched"))...)
	p.expectLine(t, "a")
	require.NoError(t, a.Close())
	p.expectLine(t, "b")
	require.NoError(t, b.Close())
	p.expectLine(t, "") // nobody leads
	c := startLatch(t, client(t, cl), "/watched", "c")
	p.expectLine(t, "c")

	p.signal(t, syscall.SIGINT)
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, 128+int(syscall.SIGINT), r.code, r.stderr)
	assert.Equal(t, "a\nb\n\nc\n", r.stdout, "one line per change, nothing more")
	assert.Empty(t, r.stderr)
	awaitTerm(t, c)
}

func TestLeaderWatchJSONPrintsAnObjectPerLine(t *testing.T) {
	cl, connect := server(t)
	a := startLatch(t, client(t, cl), "/watched", "a")
	ta := awaitTerm(t, a)

	p := start(t, args(connect, cmd("leader", "-w", "-o", "json", "/watched"))...)
	first := decodeLeader(t, p.nextLine(t))
	assert.Equal(t, "/watched", first.Path)
	require.NotNil(t, first.Leader)
	assert.Equal(t, "a", first.Leader.ID)
	assert.Equal(t, ta, first.Leader.Token)
	assert.Regexp(t, `^/watched/_c_[0-9a-f-]{36}-latch-\d{10}$`, first.Leader.Node)
	assert.WithinDuration(t, time.Now(), first.Leader.Since, time.Minute)
	assert.Nil(t, first.Participants, "--watch follows the leader, not the queue")

	require.NoError(t, a.Close())
	gone := decodeLeader(t, p.nextLine(t))
	assert.Equal(t, "/watched", gone.Path)
	assert.Nil(t, gone.Leader, "nobody leads: leader is null")

	p.signal(t, syscall.SIGTERM)
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, 128+int(syscall.SIGTERM), r.code, r.stderr)
}

func TestLeaderJSONPrintsOneObjectWithTheQueue(t *testing.T) {
	cl, connect := server(t)
	obs := client(t, cl)
	a := startLatch(t, client(t, cl), "/json", "a")
	ta := awaitTerm(t, a)
	startLatch(t, client(t, cl), "/json", "b")
	waitChildren(t, obs, "/json", 2)

	for name, run := range map[string]func() result{
		"--output json": func() result { return zkr(t, args(connect, cmd("leader", "--output", "json", "/json"))...) },
		"ZKR_OUTPUT": func() result {
			return startWith(t, []string{"ZKR_OUTPUT=json"}, args(connect, cmd("leader", "/json"))...).wait(t, time.Minute)
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := run()
			require.Equal(t, 0, r.code, r.stderr)
			require.Len(t, lines(r.stdout), 1, "one object: %s", r.stdout)
			v := decodeLeader(t, r.stdout)
			require.NotNil(t, v.Leader)
			assert.Equal(t, "a", v.Leader.ID)
			assert.Equal(t, ta, v.Leader.Token)
			require.NotNil(t, v.Participants)
			assert.Equal(t, []string{"a", "b"}, *v.Participants)
		})
	}

	t.Run("nobody leads", func(t *testing.T) {
		r := zkr(t, args(connect, cmd("leader", "-o", "json", "/nobody"))...)
		assert.Equal(t, exitNoLeader, r.code, r.stderr)
		v := decodeLeader(t, r.stdout)
		assert.Nil(t, v.Leader)
		require.NotNil(t, v.Participants)
		assert.Empty(t, *v.Participants)
		assert.JSONEq(t, `{"path":"/nobody","leader":null,"participants":[]}`, r.stdout)
	})

	t.Run("-o text is the default", func(t *testing.T) {
		r := zkr(t, args(connect, cmd("leader", "-o", "text", "/json"))...)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "a\nb\n", r.stdout)
	})
}

// ZKR_OUTPUT is for the subcommands that print results: a bad one is a
// usage error there, and nothing to the others.
func TestLeaderBadZKROutputIsAUsageErrorThatOtherSubcommandsIgnore(t *testing.T) {
	cl, connect := server(t)
	r := startWith(t, []string{"ZKR_OUTPUT=yaml"}, args(connect, cmd("leader", "/p"))...).wait(t, time.Minute)
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, `ZKR_OUTPUT="yaml"`)
	r = startWith(t, []string{"ZKR_OUTPUT=yaml"}, args(connect, cmd("lock", "/p"), sh("echo ran"))...).wait(t, time.Minute)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "ran\n", r.stdout)
	assert.Empty(t, children(t, client(t, cl), "/p"))
}

// A path zkr may not read ends --watch with 125 and the reason: waiting
// cannot cure it.
func TestLeaderWatchOfAPathItMayNotReadExits125(t *testing.T) {
	cl, connect := server(t)
	owner := client(t, cl)
	_, err := owner.Create(testkit.Ctx(t, 10*time.Second), "/secret", nil,
		framework.WithACL(zk.DigestACL(zk.PermAll, "owner", "secret")))
	require.NoError(t, err)
	r := zkr(t, args(connect, cmd("leader", "--watch", "/secret"))...)
	assert.Equal(t, exitFailed, r.code, r.stderr)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "/secret")
	assert.Contains(t, r.stderr, zk.ErrNoAuth.Error())
}

func TestLeaderHelpNamesWatchAndOutput(t *testing.T) {
	for _, a := range [][]string{{"help", "leader"}, {"leader", "--help"}} {
		r := zkr(t, a...)
		require.Equal(t, 0, r.code, r.stderr)
		for _, want := range []string{"-w, --watch", "--output FORMAT", "ZKR_OUTPUT", `"token"`, "130"} {
			assert.Contains(t, r.stdout, want, "zkr %v", a)
		}
	}
	r := zkr(t, "--help")
	assert.Contains(t, r.stdout, "zkr leader [--watch] [-o json]")
	assert.Contains(t, r.stdout, "ZKR_OUTPUT")
}

// nextLine waits for the next stdout line.
func (p *proc) nextLine(t *testing.T) string {
	t.Helper()
	select {
	case l := <-p.lines:
		return l
	case <-p.done:
		select { // printed, then exited: the line still counts
		case l := <-p.lines:
			return l
		default:
			t.Fatalf("zkr exited %d without a line; stderr:\n%s", p.res.code, p.res.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no line from zkr after 30s; stderr:\n%s", p.stderr.String())
	}
	return ""
}

// zkr leader answers for elections and mutexes only: a path that holds
// another recipe's nodes (a semaphore, a read-write lock) or nodes of no
// queue at all (/zookeeper, a barrier's directory) is refused with 2 and
// the reason, where it named one of those nodes as the leader and exited 0.
func TestLeaderRefusesAPathThatIsNotAnElection(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	s, err := semaphore.New(c, "/kinds/sem", 2, semaphore.WithParticipantID("lease-holder"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	_, err = s.Acquire(testkit.Ctx(t, 30*time.Second), 1)
	require.NoError(t, err)
	rw, err := rwlock.New(c, "/kinds/rw", rwlock.WithParticipantID("reader"))
	require.NoError(t, err)
	t.Cleanup(func() { rw.Close() })
	_, err = rw.ReadLock().Acquire(testkit.Ctx(t, 30*time.Second))
	require.NoError(t, err)
	_, err = c.Create(testkit.Ctx(t, 10*time.Second), "/kinds/barrier/worker-1", nil, framework.WithParents())
	require.NoError(t, err)

	for path, why := range map[string]string{
		"/zookeeper":        "not an election",
		"/kinds/barrier":    "not an election",
		"/kinds/sem":        "semaphore",
		"/kinds/rw":         "rwlock",
		"/kinds/sem/leases": "not an election",
	} {
		for _, a := range [][]string{{"leader", path}, {"leader", "-o", "json", path}, {"leader", "--watch", path}} {
			t.Run(strings.Join(a, " "), func(t *testing.T) {
				r := start(t, args(connect, a)...).wait(t, 20*time.Second)
				assert.Equal(t, exitUsage, r.code, r.stderr)
				assert.Empty(t, r.stdout, "no leader named")
				assert.Contains(t, r.stderr, path)
				assert.Contains(t, r.stderr, why)
			})
		}
	}
}

// Nobody leads a path with no queue nodes, even where a semaphore left its
// directories: 1, nothing on stdout.
func TestLeaderOfAnEmptyPathSaysNobodyLeads(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	for _, p := range []string{"/empty", "/left/leases", "/left/locks"} {
		_, err := c.Create(testkit.Ctx(t, 10*time.Second), p, nil, framework.WithParents())
		require.NoError(t, err)
	}
	for _, path := range []string{"/empty", "/missing", "/left"} {
		r := zkr(t, args(connect, cmd("leader", path))...)
		assert.Equal(t, exitNoLeader, r.code, "%s: %s", path, r.stderr)
		assert.Empty(t, r.stdout, path)
		assert.Contains(t, r.stderr, "nobody leads "+path)
	}
}

// Curator's LeaderLatch without an id writes none: its node's data is
// empty. zkr leader shows that id as "" (quoted, as zkr ls shows it), so
// that a script tells it from nobody leading: nothing and 1 without
// --watch, an empty line with --watch. It printed an empty line and 0.
func TestLeaderShowsAnEmptyIDApartFromNobody(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	ctx := testkit.Ctx(t, time.Minute)
	anonymous, err := c.Create(ctx, "/anon/latch-", nil, framework.WithMode(framework.EphemeralSequential), framework.WithParents())
	require.NoError(t, err)
	named, err := c.Create(ctx, "/anon/latch-", []byte("b"), framework.WithMode(framework.EphemeralSequential))
	require.NoError(t, err)
	// An id that is two quotes is not taken for the empty one either.
	quotes, err := c.Create(ctx, "/anon/latch-", []byte(`""`), framework.WithMode(framework.EphemeralSequential))
	require.NoError(t, err)

	r := zkr(t, args(connect, cmd("leader", "/anon"))...)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, `""`+"\nb\n"+`"\"\""`+"\n", r.stdout, "the anonymous leader, then b, then the quotes")

	p := start(t, args(connect, cmd("leader", "--watch", "/anon"))...)
	p.expectLine(t, `""`)
	require.NoError(t, c.Delete(ctx, anonymous, -1))
	p.expectLine(t, "b")
	require.NoError(t, c.Delete(ctx, named, -1))
	p.expectLine(t, `"\"\""`)
	require.NoError(t, c.Delete(ctx, quotes, -1))
	p.expectLine(t, "") // nobody leads
	p.signal(t, syscall.SIGINT)
	r = p.wait(t, 30*time.Second)
	assert.Equal(t, 128+int(syscall.SIGINT), r.code, r.stderr)

	r = zkr(t, "leader", "--help")
	assert.Contains(t, strings.Join(strings.Fields(r.stdout), " "), `Curator's default id, empty, is shown as ""`)
}
