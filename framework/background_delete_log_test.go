package framework_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// An InBackground delete returns before its answer, so a delete the server
// refuses for good (here: no permission, as a recipe's release can meet)
// is neither returned nor pending: the client says so in its log, as the
// background deleter does when it gives up, instead of leaving the node
// behind in silence.
func TestInBackgroundDeleteRefusedForGoodIsLogged(t *testing.T) {
	cl := zktest.Standalone(t)
	var logs testkit.SyncBuffer
	c, _ := dialFault(t, cl, framework.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	for _, path := range []string{"/locked", "/locked/n"} {
		_, err := c.Create(t.Context(), path, nil)
		require.NoError(t, err)
	}
	admin, _, err := zk.Connect(cl.DirectAddrs(), 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer admin.Close()
	_, err = admin.SetACL("/locked", zk.WorldACL(zk.PermAll&^zk.PermDelete), -1)
	require.NoError(t, err)

	require.NoError(t, c.Delete(t.Context(), "/locked/n", -1, framework.InBackground()))
	require.NoError(t, c.Drain(t.Context()))
	assert.Empty(t, c.PendingDeletes())
	assert.Contains(t, logs.String(), "/locked/n")
	assert.Contains(t, logs.String(), zk.ErrNoAuth.Error())
}
