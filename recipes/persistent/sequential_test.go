package persistent_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/persistent"
)

// The reply to a sequential node's first create is lost: the Node finds
// the node that create made instead of making a second one.
func TestSequentialNodeWhoseCreateReplyIsLostIsMadeOnce(t *testing.T) {
	for name, opts := range map[string][]persistent.Option{
		"ephemeral":  {persistent.Sequential()},
		"persistent": {persistent.Sequential(), persistent.Persistent()},
	} {
		t.Run(name, func(t *testing.T) {
			cl := zktest.Standalone(t)
			p := cl.NewProxy()
			c := newClient(t, p.Addrs())
			observer := newClient(t, cl.Addrs())
			_, err := observer.Create(ctxT(t, 10*time.Second), "/pn/seq", nil, framework.WithMode(framework.Persistent), framework.WithParents())
			require.NoError(t, err)
			n, err := persistent.New(c, "/pn/seq/w-", []byte("s"), opts...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = n.Close() })

			p.DropRepliesFrom(zktest.OpCreate)
			startErr := make(chan error, 1)
			go func() { startErr <- n.Start(ctxT(t, 60*time.Second)) }()
			testkit.WaitChildren(t, observer, "/pn/seq", 1)
			p.Heal()
			require.NoError(t, <-startErr)
			st := waitInPlace(t, n, observer, 0, "s")
			assert.Equal(t, []string{framework.Base(st.Path)}, testkit.Children(t, observer, "/pn/seq"),
				"a second node was made")
		})
	}
}
