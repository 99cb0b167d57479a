package main

import (
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/group"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// joinGroup makes c a member of the group at path, until the test ends.
func joinGroup(t *testing.T, c *framework.Client, path, id, payload string) *group.Member {
	t.Helper()
	m, err := group.New(c, path, id, []byte(payload))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	require.NoError(t, m.Start(testkit.Ctx(t, 30*time.Second)))
	return m
}

// zkr members prints a group's members, sorted by id, with their payloads
// (quoted where a terminal would need it); -o json gives each member's
// session.
func TestMembersListsAGroupsMembersSortedByID(t *testing.T) {
	cl, connect := server(t)
	cb := client(t, cl)
	joinGroup(t, cb, "/groups/g", "b", "pb")
	joinGroup(t, client(t, cl), "/groups/g", "a", "two words")

	r := zkr(t, args(connect, cmd("members", "/groups/g"))...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "a \"two words\"\nb pb\n", r.stdout)
	assert.Empty(t, r.stderr)

	r = zkr(t, args(connect, cmd("members", "-o", "json", "/groups/g"))...)
	require.Equal(t, 0, r.code, r.stderr)
	var got struct {
		Path    string `json:"path"`
		Members []struct {
			ID, Payload, Session string
			Since                time.Time
		} `json:"members"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
	assert.Equal(t, "/groups/g", got.Path)
	require.Len(t, got.Members, 2)
	assert.Equal(t, "b", got.Members[1].ID)
	assert.Equal(t, "pb", got.Members[1].Payload)
	assert.Equal(t, session(cb), got.Members[1].Session)
	assert.WithinDuration(t, time.Now(), got.Members[1].Since, time.Minute)

	mkNode(t, cb, "/groups/none", "")
	r = zkr(t, args(connect, cmd("members", "-o", "json", "/groups/none"))...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.JSONEq(t, `{"path":"/groups/none","members":[]}`, r.stdout)
}

// A group with no members is shown empty (0); a path that does not exist
// is not a group at all: 1, nothing on stdout, and a line on stderr that
// says so, as ls does. Both printed nothing and exited 0. --watch still
// follows a path that is not there yet (TestMembersWatchJSONPrintsAnObjectPerChange).
func TestMembersTellsAMissingPathFromAnEmptyGroup(t *testing.T) {
	cl, connect := server(t)
	mkNode(t, client(t, cl), "/groups/empty", "")
	for _, out := range [][]string{nil, {"-o", "json"}} {
		r := zkr(t, args(connect, cmd("members"), out, cmd("/groups/empty"))...)
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Empty(t, r.stderr)

		r = zkr(t, args(connect, cmd("members"), out, cmd("/groups/missing"))...)
		assert.Equal(t, exitMissing, r.code, r.stderr)
		assert.Empty(t, r.stdout)
		assert.Equal(t, "zkr members: /groups/missing does not exist\n", r.stderr)
	}
}

// zkr members --watch prints the members, then each join, payload change
// and leave, until SIGTERM (143).
func TestMembersWatchPrintsJoinsChangesAndLeavesUntilSIGTERM(t *testing.T) {
	cl, connect := server(t)
	joinGroup(t, client(t, cl), "/groups/w", "a", "pa")

	p := start(t, args(connect, cmd("members", "--watch", "/groups/w"))...)
	p.expectLine(t, "joined  a pa")
	b := joinGroup(t, client(t, cl), "/groups/w", "b", "pb")
	p.expectLine(t, "joined  b pb")
	require.NoError(t, b.Set(testkit.Ctx(t, 10*time.Second), []byte("pb2")))
	p.expectLine(t, "changed b pb2")
	require.NoError(t, b.Close())
	p.expectLine(t, "left    b pb2")

	p.signal(t, syscall.SIGTERM)
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, 128+int(syscall.SIGTERM), r.code, r.stderr)
	assert.Empty(t, r.stderr)
}

// zkr members --watch -o json prints one object per change.
func TestMembersWatchJSONPrintsAnObjectPerChange(t *testing.T) {
	cl, connect := server(t)
	p := start(t, args(connect, cmd("members", "-w", "-o", "json", "/groups/j"))...)
	c := client(t, cl)
	joinGroup(t, c, "/groups/j", "m", "pm")
	var ev struct{ Event, ID, Payload, Session string }
	require.NoError(t, json.Unmarshal([]byte(p.nextLine(t)), &ev))
	assert.Equal(t, "joined", ev.Event)
	assert.Equal(t, "m", ev.ID)
	assert.Equal(t, "pm", ev.Payload)
	assert.Equal(t, session(c), ev.Session)
	p.signal(t, syscall.SIGINT)
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, 128+int(syscall.SIGINT), r.code, r.stderr)
}

// A path whose children are not members (persistent nodes, or a lock's)
// is refused with 2 and the reason, with or without --watch.
func TestMembersRefusesAPathThatIsNotAGroup(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	mkNode(t, c, "/plain/config", "x")
	m, err := mutex.New(c, "/locked", mutex.WithParticipantID("holder"))
	require.NoError(t, err)
	holdMutex(t, m)
	for path, want := range map[string]string{
		"/plain":     "/plain is not a group: its child config is persistent",
		"/locked":    "/locked is not a group: it holds a queue's nodes",
		"/zookeeper": "/zookeeper is not a group",
	} {
		for _, watch := range [][]string{nil, {"--watch"}} {
			r := zkr(t, args(connect, cmd("members"), watch, cmd(path))...)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, want)
		}
	}
}

// zkr members --watch says on stderr when the member list shown may be stale,
// and when they are current again.
func TestMembersWatchSaysWhenItsViewIsStale(t *testing.T) {
	cl, _ := server(t)
	joinGroup(t, client(t, cl), "/groups/s", "a", "pa")
	px := cl.NewProxy()
	t.Cleanup(px.Close)
	// A session that outlives the blackhole healed once zkr says the link
	// is down (testkit.CutSessionTimeout's doc): with 3s the server could
	// expire it as go-zookeeper dialled again, and the test took the
	// session-lost path instead of the one it is about.
	p := start(t, "--connect", px.ConnectString(), "--session-timeout", testkit.CutSessionTimeout.String(), "members", "--watch", "/groups/s")
	p.expectLine(t, "joined  a pa")
	px.Blackhole()
	p.awaitStderr(t, "zkr members: link to ZooKeeper down: the member list shown may be stale", 1, 30*time.Second)
	joinGroup(t, client(t, cl), "/groups/s", "b", "pb")
	px.Heal()
	p.expectLine(t, "joined  b pb")
	p.awaitStderr(t, "zkr members: link to ZooKeeper back: the member list shown is current again", 1, 30*time.Second)
	p.signal(t, syscall.SIGINT)
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, 128+int(syscall.SIGINT), r.code, r.stderr)
}
