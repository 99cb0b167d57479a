package discovery_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
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
