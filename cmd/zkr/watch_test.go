package main

import (
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
)

// mkNode makes path (and its parents) with data.
func mkNode(t *testing.T, c *framework.Client, path, data string, opts ...framework.CreateOption) {
	t.Helper()
	_, err := c.Create(testkit.Ctx(t, 10*time.Second), path, []byte(data), append([]framework.CreateOption{framework.WithParents()}, opts...)...)
	require.NoError(t, err)
}

// zkr watch prints the view, then each change in the server's order, one
// line each, until Ctrl-C (130); it says nothing on stderr.
func TestWatchPrintsTheViewThenEachChangeUntilSIGINT(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	mkNode(t, c, "/w/a", "one")

	p := start(t, args(connect, cmd("watch", "/w"))...)
	p.expectLine(t, `snapshot /w v0 ""`)
	p.expectLine(t, "snapshot /w/a v0 one")
	mkNode(t, c, "/w/b", "two words")
	p.expectLine(t, `created  /w/b v0 "two words"`)
	_, err := c.Set(testkit.Ctx(t, 10*time.Second), "/w/a", []byte("uno"), -1)
	require.NoError(t, err)
	p.expectLine(t, "changed  /w/a v1 uno")
	require.NoError(t, c.Delete(testkit.Ctx(t, 10*time.Second), "/w/b", -1))
	p.expectLine(t, `deleted  /w/b v0 "two words"`)

	p.signal(t, syscall.SIGINT)
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, 128+int(syscall.SIGINT), r.code, r.stderr)
	assert.Empty(t, r.stderr)
}

// --depth and --children choose what is followed: a node below the depth
// is never shown, and --children leaves PATH itself out.
func TestWatchDepthAndChildrenChooseWhatIsFollowed(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	mkNode(t, c, "/d/a/deep", "x")

	p := start(t, args(connect, cmd("watch", "--children", "/d"))...)
	p.expectLine(t, `snapshot /d/a v0 ""`)
	mkNode(t, c, "/d/b", "")
	p.expectLine(t, `created  /d/b v0 ""`)
	p.signal(t, syscall.SIGTERM)
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, 128+int(syscall.SIGTERM), r.code, r.stderr)
	assert.NotContains(t, r.stdout, "/d/a/deep")

	p = start(t, args(connect, cmd("watch", "--depth", "1", "--no-data", "/d"))...)
	p.expectLine(t, "snapshot /d v0")
	p.expectLine(t, "snapshot /d/a v0")
	p.expectLine(t, "snapshot /d/b v0")
	mkNode(t, c, "/d/a/deeper", "")
	mkNode(t, c, "/d/c", "data not shown")
	p.expectLine(t, "created  /d/c v0")
	p.signal(t, syscall.SIGINT)
	r = p.wait(t, 30*time.Second)
	assert.Equal(t, 128+int(syscall.SIGINT), r.code, r.stderr)
	assert.NotContains(t, r.stdout, "/d/a/deep")
}

// watchEvent is an object of zkr watch -o json, as a reader decodes it.
type watchEvent struct {
	Type  string     `json:"type"`
	Time  time.Time  `json:"time"`
	Node  *watchNode `json:"node"`
	Old   *watchNode `json:"old"`
	Nodes *[]watchNode
}

type watchNode struct {
	Path       string `json:"path"`
	Data       *string
	DataBase64 []byte `json:"data_base64"`
	Stat       struct {
		Czxid          int64  `json:"czxid"`
		Mzxid          int64  `json:"mzxid"`
		Version        int32  `json:"version"`
		EphemeralOwner string `json:"ephemeral_owner"`
	} `json:"stat"`
}

func decodeWatch(t *testing.T, line string) watchEvent {
	t.Helper()
	var ev watchEvent
	require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
	return ev
}

// -o json is one object per event: the snapshot with every node (data as
// text, or base64 if it is not UTF-8), then created, changed (with the old
// state) and deleted, each with its Stat.
func TestWatchJSONPrintsAnObjectPerEvent(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	mkNode(t, c, "/j/bin", "\xff\x00")

	p := start(t, args(connect, cmd("watch", "-o", "json", "--children", "/j"))...)
	snap := decodeWatch(t, p.nextLine(t))
	assert.Equal(t, "snapshot", snap.Type)
	assert.WithinDuration(t, time.Now(), snap.Time, time.Minute)
	require.NotNil(t, snap.Nodes)
	require.Len(t, *snap.Nodes, 1)
	bin := (*snap.Nodes)[0]
	assert.Equal(t, "/j/bin", bin.Path)
	assert.Nil(t, bin.Data)
	assert.Equal(t, []byte("\xff\x00"), bin.DataBase64)

	mkNode(t, c, "/j/e", "ephemeral", framework.WithMode(framework.Ephemeral))
	created := decodeWatch(t, p.nextLine(t))
	assert.Equal(t, "created", created.Type)
	require.NotNil(t, created.Node)
	require.NotNil(t, created.Node.Data)
	assert.Equal(t, "ephemeral", *created.Node.Data)
	assert.Regexp(t, `^0x[0-9a-f]+$`, created.Node.Stat.EphemeralOwner)

	_, err := c.Set(testkit.Ctx(t, 10*time.Second), "/j/e", []byte("set"), -1)
	require.NoError(t, err)
	changed := decodeWatch(t, p.nextLine(t))
	assert.Equal(t, "changed", changed.Type)
	require.NotNil(t, changed.Old)
	assert.Equal(t, "ephemeral", *changed.Old.Data)
	assert.Equal(t, "set", *changed.Node.Data)
	assert.Equal(t, int32(1), changed.Node.Stat.Version)
	assert.Greater(t, changed.Node.Stat.Mzxid, changed.Old.Stat.Mzxid)

	require.NoError(t, c.Delete(testkit.Ctx(t, 10*time.Second), "/j/e", -1))
	assert.Equal(t, "deleted", decodeWatch(t, p.nextLine(t)).Type)

	p.signal(t, syscall.SIGTERM)
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, 128+int(syscall.SIGTERM), r.code, r.stderr)
}

// zkr watch says on stderr when the view may be stale (link down, session
// lost) and when it is current again, as zkr ls --watch; and it prints the
// changes made meanwhile once back.
func TestWatchSaysWhenItsViewIsStaleAndWhenCurrentAgain(t *testing.T) {
	px, p := staleWatch(t, `^snapshot /watched/_c_[0-9a-f-]{36}-lock-\d{10} v0 holder$`, "watch", "--children", "/watched")

	px.Blackhole()
	p.awaitStderr(t, "zkr watch: link to ZooKeeper down: the view shown may be stale", 1, 30*time.Second)
	px.Heal()
	p.awaitStderr(t, "zkr watch: link to ZooKeeper back: the view shown is current again", 1, 30*time.Second)

	px.Blackhole() // longer than the session timeout
	p.awaitStderr(t, "zkr watch: session lost: the view shown may be stale until a new session looks again", 1, time.Minute)
	px.Heal()
	p.awaitStderr(t, "zkr watch: link to ZooKeeper back: the view shown is current again", 2, 30*time.Second)

	p.signal(t, syscall.SIGINT)
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, 128+int(syscall.SIGINT), r.code, r.stderr)
}

// A path zkr may not read ends zkr watch at once with 125 and the reason.
func TestWatchOfAPathItMayNotReadExits125(t *testing.T) {
	cl, connect := server(t)
	_, err := client(t, cl).Create(testkit.Ctx(t, 10*time.Second), "/secret", nil,
		framework.WithACL(zk.DigestACL(zk.PermAll, "owner", "secret")))
	require.NoError(t, err)
	r := zkr(t, args(connect, cmd("watch", "/secret"))...)
	assert.Equal(t, exitFailed, r.code, r.stderr)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "/secret")
	assert.Contains(t, r.stderr, zk.ErrNoAuth.Error())
}
