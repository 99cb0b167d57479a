package mutex_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// logLines is a slog JSON sink that tests can read while clients write.
type logLines struct{ testkit.SyncBuffer }

// find returns the records whose message is msg.
func (l *logLines) find(msg string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(l.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// A hold's grant is logged at Debug and its loss at Warn, through the
// client's logger, with the attributes every log line of the module uses
// for them: path, session (hex), token and reason.
func TestAHoldIsLoggedWithPathSessionTokenAndReason(t *testing.T) {
	cl := zktest.Standalone(t)
	logs := &logLines{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := testkit.Client(t, cl.Addrs(), framework.WithLogger(log))
	other := newClient(t, cl.Addrs())
	m := newMutex(t, c, "/logged")
	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, other.Delete(ctxT(t, 10*time.Second), h.Path(), -1))
	testkit.WaitClosed(t, h.Done(), 30*time.Second, "the hold was not lost")

	want := map[string]any{
		"path":    h.Path(),
		"session": fmt.Sprintf("0x%x", h.SessionID()),
		"token":   float64(h.Token()), // as JSON numbers decode
	}
	granted := logs.find("zookeeper hold granted")
	require.Len(t, granted, 1)
	assert.Equal(t, "DEBUG", granted[0]["level"])
	for k, v := range want {
		assert.Equal(t, v, granted[0][k], k)
	}
	require.Eventually(t, func() bool { return len(logs.find("zookeeper hold lost")) == 1 }, 10*time.Second, 10*time.Millisecond)
	lost := logs.find("zookeeper hold lost")[0]
	assert.Equal(t, "WARN", lost["level"])
	for k, v := range want {
		assert.Equal(t, v, lost[k], k)
	}
	assert.Equal(t, "node_deleted", lost["reason"])
	assert.ErrorIs(t, h.Release(), zkrecipes.ErrHoldLost)
}
