package discovery_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes/persistent"
)

// Two Register calls for one id on one Discovery at the same time both
// succeed: the later waits for the earlier's node, then updates it.
func TestConcurrentRegistersOfOneIDBothSucceed(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	d := newDiscovery(t, c, "/services")
	for i := range 20 {
		a := discovery.NewInstance("pair")
		a.ID = fmt.Sprintf("id%d", i)
		b := a
		b.Port = port(9000 + i)
		errs := make(chan error, 2)
		for _, inst := range []discovery.Instance{a, b} {
			go func() { errs <- d.Register(ctxT(t, 30*time.Second), inst) }()
		}
		require.NoError(t, <-errs, "pair %d", i)
		require.NoError(t, <-errs, "pair %d", i)
		st, ok := d.Registration(a.ID)
		require.True(t, ok)
		assert.True(t, st.InPlace, "pair %d: %v", i, st.Err)
		data, _ := getNode(t, c, "/services/pair/"+a.ID)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		assert.Contains(t, []string{string(ja), string(jb)}, string(data), "pair %d", i)
	}
}

// A Register that finds another live session's registration of its id
// takes the node (the newest registration wins, as Curator's
// registerService), every time; the registration that lost it says so
// (persistent.ErrOtherOwner) and makes its node again once the other's
// goes.
func TestNewestRegistrationOfOneIDTakesTheNodeAndTheOtherIsTold(t *testing.T) {
	cl := zktest.Standalone(t)
	ca, cb := newClient(t, cl.Addrs()), newClient(t, cl.Addrs())
	da, db := newDiscovery(t, ca, "/services"), newDiscovery(t, cb, "/services")
	sub := da.Subscribe()
	defer sub.Close()
	for i := range 10 {
		first := discovery.NewInstance("twice")
		first.ID = fmt.Sprintf("id%d", i)
		first.Port = port(1)
		second := first
		second.Port = port(2)
		require.NoError(t, da.Register(ctxT(t, 30*time.Second), first))

		require.NoError(t, db.Register(ctxT(t, 10*time.Second), second), "round %d", i)
		path := "/services/twice/" + first.ID
		data, st := getNode(t, cb, path)
		assert.Equal(t, cb.Session().ID, st.EphemeralOwner, "round %d", i)
		assert.Contains(t, string(data), `"port":2`)
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			st, ok := da.Registration(first.ID)
			assert.True(ct, ok)
			assert.False(ct, st.InPlace)
			assert.ErrorIs(ct, st.Err, persistent.ErrOtherOwner)
		}, 10*time.Second, 10*time.Millisecond, "round %d", i)
		waitRegistrations(t, sub, func(r discovery.Registrations) bool {
			return r.Changed == first.ID && errors.Is(r.Statuses[first.ID].Err, persistent.ErrOtherOwner)
		})

		require.NoError(t, db.Unregister(second))
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			st, ok := da.Registration(first.ID)
			assert.True(ct, ok)
			assert.True(ct, st.InPlace)
			assert.Equal(ct, ca.Session().ID, st.Owner)
		}, 10*time.Second, 10*time.Millisecond, "round %d", i)
		waitRegistrations(t, sub, func(r discovery.Registrations) bool {
			return r.Changed == first.ID && r.Statuses[first.ID].InPlace
		})
		data, _ = getNode(t, cb, path)
		assert.Contains(t, string(data), `"port":1`)
	}
}

// waitRegistrations reads sub until a value satisfies ok.
func waitRegistrations(t *testing.T, sub *framework.Subscription[discovery.Registrations], ok func(discovery.Registrations) bool) discovery.Registrations {
	t.Helper()
	deadline := time.After(30 * time.Second)
	var last discovery.Registrations
	for {
		select {
		case r, open := <-sub.Changes():
			require.True(t, open, "the subscription ended; last %+v", last)
			if ok(r) {
				return r
			}
			last = r
		case <-deadline:
			require.FailNow(t, "no such value", "last %+v", last)
		}
	}
}

// A subscriber to the registrations is told their current state once,
// then each registration that begins, changes and ends, up to Close.
func TestRegistrationsSubscriberIsToldTheCurrentStateThenEachChange(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	d := newDiscovery(t, c, "/services")
	ctx := ctxT(t, 30*time.Second)
	a, b := discovery.NewInstance("subs"), discovery.NewInstance("subs")
	a.ID, b.ID = "a", "b"
	require.NoError(t, d.Register(ctx, a))
	require.NoError(t, d.Register(ctx, b))

	sub := d.Subscribe()
	defer sub.Close()
	first := <-sub.Changes()
	assert.Empty(t, first.Changed)
	require.Len(t, first.Statuses, 2)
	for _, id := range []string{"a", "b"} {
		assert.True(t, first.Statuses[id].InPlace, id)
		assert.Equal(t, c.Session().ID, first.Statuses[id].Owner, id)
	}

	require.NoError(t, d.Unregister(a))
	gone := <-sub.Changes()
	assert.Equal(t, "a", gone.Changed)
	assert.NotContains(t, gone.Statuses, "a")
	assert.Contains(t, gone.Statuses, "b")

	cc := discovery.NewInstance("subs")
	cc.ID = "c"
	require.NoError(t, d.Register(ctx, cc))
	began := <-sub.Changes()
	assert.Equal(t, "c", began.Changed)
	assert.False(t, began.Statuses["c"].InPlace)
	waitRegistrations(t, sub, func(r discovery.Registrations) bool { return r.Statuses["c"].InPlace })

	require.NoError(t, d.Close())
	var last discovery.Registrations
	for r := range sub.Changes() {
		last = r
	}
	assert.Empty(t, last.Statuses, "Close ends every registration, and says so")
	assert.NotEmpty(t, last.Changed)
}

// Registering an id again takes its node back from another session's
// registration that took it: the newest Register wins.
func TestRegisterAgainTakesTheNodeBack(t *testing.T) {
	cl := zktest.Standalone(t)
	ca, cb := newClient(t, cl.Addrs()), newClient(t, cl.Addrs())
	da, db := newDiscovery(t, ca, "/services"), newDiscovery(t, cb, "/services")
	inst := discovery.NewInstance("back")
	require.NoError(t, da.Register(ctxT(t, 30*time.Second), inst))
	require.NoError(t, db.Register(ctxT(t, 30*time.Second), inst))
	require.NoError(t, da.Register(ctxT(t, 10*time.Second), inst))
	_, st := getNode(t, ca, "/services/back/"+inst.ID)
	assert.Equal(t, ca.Session().ID, st.EphemeralOwner)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		st, ok := db.Registration(inst.ID)
		assert.True(ct, ok)
		assert.ErrorIs(ct, st.Err, persistent.ErrOtherOwner)
	}, 10*time.Second, 10*time.Millisecond)
}

// An Update that leaves the service type out keeps the registered one,
// in the node's JSON too.
func TestUpdateWithoutServiceTypeKeepsTheRegisteredOne(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	d := newDiscovery(t, c, "/services")
	inst := discovery.NewInstance("typed")
	inst.ServiceType = discovery.Static
	require.NoError(t, d.Register(ctxT(t, 30*time.Second), inst))
	inst.ServiceType = ""
	inst.Port = port(7)
	require.NoError(t, d.Update(ctxT(t, 30*time.Second), inst))
	data, _ := getNode(t, c, "/services/typed/"+inst.ID)
	assert.Contains(t, string(data), `"serviceType":"STATIC"`)
	assert.Contains(t, string(data), `"port":7`)
}
