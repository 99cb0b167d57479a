package curator_test

// Interop with Curator 5.4's GroupMember: a Go member and a Java member of
// one group see each other, payloads included, and see each other leave.

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/curator"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/group"
)

func TestGoAndCuratorGroupMembersSeeEachOther(t *testing.T) {
	cl := zktest.Standalone(t)
	java := curator.Agent(t).Start(t, cl.ConnectString(), 10*time.Second)
	java.Call(t, "group-join /grp j "+hex.EncodeToString([]byte("java")), "group-joined j", 30*time.Second)

	m, err := group.New(observer(t, cl), "/grp", "g", []byte("go"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	want := "group-members j g=" + hex.EncodeToString([]byte("go")) + ",j=" + hex.EncodeToString([]byte("java"))
	waitFor(t, "Curator's view of both", func() bool {
		return java.Call(t, "group-members j", "group-members j", 10*time.Second) == want
	})
	waitFor(t, "Go's view of both", func() bool {
		got, err := m.Members()
		return err == nil && len(got) == 2 && string(got["j"]) == "java" && string(got["g"]) == "go"
	})

	java.Call(t, "group-leave j", "group-left j", 30*time.Second)
	waitFor(t, "Go's view without Curator's member", func() bool {
		got, err := m.Members()
		_, still := got["j"]
		return err == nil && !still
	})
}

// waitFor polls cond until it holds, for at most 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}
