package main

import (
	"encoding/json"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// register registers an instance of name with id at address:port under
// base, until the test ends.
func register(t *testing.T, c *framework.Client, base, name, id string, port int) (*discovery.Discovery, discovery.Instance) {
	t.Helper()
	d, err := discovery.New(c, base)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	inst := discovery.NewInstance(name)
	inst.ID, inst.Address, inst.Port = id, "10.0.0.7", &port
	inst.Payload = json.RawMessage(`{"zone":"a"}`)
	require.NoError(t, d.Register(testkit.Ctx(t, 30*time.Second), inst))
	return d, inst
}

// zkr services lists the services under the base path, and with NAME its
// instances: a table, or Curator's JSON of each with -o json.
func TestServicesListsNamesAndInstances(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	register(t, c, "/services", "billing", "b2", 8081)
	register(t, c, "/services", "billing", "b1", 8080)
	register(t, c, "/services", "search", "s1", 9000)
	register(t, c, "/other", "mail", "m1", 25)

	r := zkr(t, args(connect, cmd("services"))...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "billing\nsearch\n", r.stdout)

	r = zkr(t, args(connect, cmd("services", "--base", "/other"))...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "mail\n", r.stdout)

	r = zkr(t, args(connect, cmd("services", "billing"))...)
	require.Equal(t, 0, r.code, r.stderr)
	rows := lines(r.stdout)
	require.Len(t, rows, 3, r.stdout)
	assert.Regexp(t, `^ID +ADDRESS +SSLPORT +TYPE +ENABLED +PAYLOAD$`, rows[0])
	assert.Regexp(t, regexp.MustCompile(`^b1 +10\.0\.0\.7:8080 +- +DYNAMIC +true +\{"zone":"a"\}$`), rows[1])
	assert.Regexp(t, `^b2 +10\.0\.0\.7:8081 `, rows[2])

	r = zkr(t, args(connect, cmd("services", "-o", "json", "billing"))...)
	require.Equal(t, 0, r.code, r.stderr)
	var got struct {
		Base, Name string
		Instances  []discovery.Instance
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
	assert.Equal(t, "/services", got.Base)
	assert.Equal(t, "billing", got.Name)
	require.Len(t, got.Instances, 2)
	assert.Equal(t, "b1", got.Instances[0].ID)
	assert.Equal(t, 8080, *got.Instances[0].Port)
	assert.JSONEq(t, `{"zone":"a"}`, string(got.Instances[0].Payload))

	mkNode(t, c, "/services/none", "")
	r = zkr(t, args(connect, cmd("services", "-o", "json", "none"))...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.JSONEq(t, `{"base":"/services","name":"none","instances":[]}`, r.stdout)
}

// A base path or a service with nothing registered is shown empty (0); one
// that does not exist gets 1, nothing on stdout, and a line on stderr, as
// ls says of a missing file. Both printed nothing and exited 0.
func TestServicesTellsAMissingPathFromAnEmptyOne(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	mkNode(t, c, "/empty", "")
	mkNode(t, c, "/services/idle", "")
	for _, out := range [][]string{nil, {"-o", "json"}} {
		for _, a := range [][]string{{"--base", "/empty"}, {"idle"}} {
			r := zkr(t, args(connect, cmd("services"), out, a)...)
			assert.Equal(t, 0, r.code, "%v: %s", a, r.stderr)
			assert.Empty(t, r.stderr)
		}
		for msg, a := range map[string][]string{
			"zkr services: /nowhere does not exist: no service is registered under it\n":            {"--base", "/nowhere"},
			"zkr services: no service missing under /services (/services/missing does not exist)\n": {"missing"},
		} {
			r := zkr(t, args(connect, cmd("services"), out, a)...)
			assert.Equal(t, exitMissing, r.code, "%v: %s", a, r.stderr)
			assert.Empty(t, r.stdout)
			assert.Equal(t, msg, r.stderr)
		}
	}
}

// zkr services --watch NAME prints the instances, then each registration,
// update and unregistration, until Ctrl-C (130); without NAME, the
// services that appear and go.
func TestServicesWatchPrintsRegistrationsUntilSIGINT(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	register(t, c, "/services", "api", "one", 1)

	names := start(t, args(connect, cmd("services", "-w"))...)
	names.expectLine(t, "added   api")
	p := start(t, args(connect, cmd("services", "--watch", "api"))...)
	p.expectLine(t, "registered   one 10.0.0.7:1")
	d, two := register(t, client(t, cl), "/services", "web", "two", 2)
	names.expectLine(t, "added   web")
	register(t, c, "/services", "api", "three", 3)
	p.expectLine(t, "registered   three 10.0.0.7:3")
	require.NoError(t, d.Unregister(two))
	names.expectLine(t, "removed web")

	for _, w := range []*proc{p, names} {
		w.signal(t, syscall.SIGINT)
		r := w.wait(t, 30*time.Second)
		assert.Equal(t, 128+int(syscall.SIGINT), r.code, r.stderr)
		assert.Empty(t, r.stderr)
	}
}

// An instance is listed while its process's session lives: when it ends,
// zkr services --watch reports it unregistered.
func TestServicesWatchSeesAnInstanceGoWithItsSession(t *testing.T) {
	cl, connect := server(t)
	owner := client(t, cl)
	register(t, owner, "/services", "api", "gone", 7)
	p := start(t, args(connect, cmd("services", "--watch", "-o", "json", "api"))...)
	var ev struct {
		Event    string
		Instance discovery.Instance
	}
	require.NoError(t, json.Unmarshal([]byte(p.nextLine(t)), &ev))
	assert.Equal(t, "registered", ev.Event)
	assert.Equal(t, "gone", ev.Instance.ID)
	owner.Close()
	require.NoError(t, json.Unmarshal([]byte(p.nextLine(t)), &ev))
	assert.Equal(t, "unregistered", ev.Event)
	assert.Equal(t, "gone", ev.Instance.ID)
	p.signal(t, syscall.SIGTERM)
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, 128+int(syscall.SIGTERM), r.code, r.stderr)
}

// A service whose nodes are not Curator's instance JSON is refused with 2.
func TestServicesRefusesAServiceWhoseNodesAreNotInstances(t *testing.T) {
	cl, connect := server(t)
	mkNode(t, client(t, cl), "/services/bogus/x", "not json")
	for _, watch := range [][]string{nil, {"--watch"}} {
		r := zkr(t, args(connect, cmd("services"), watch, cmd("bogus"))...)
		assert.Equal(t, exitUsage, r.code, r.stderr)
		assert.Empty(t, r.stdout)
		assert.Contains(t, r.stderr, "/services/bogus is not a service: its node x holds no instance's JSON")
	}
}
