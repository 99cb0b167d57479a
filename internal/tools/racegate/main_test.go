package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The shape of the detector's report on go-zookeeper's lastZxid, as CI
// printed it (paths shortened).
const zkRace = `WARNING: DATA RACE
Write at 0x00c0001a2b48 by goroutine 88:
  github.com/go-zookeeper/zk.(*Conn).recvLoop()
      /go/pkg/mod/github.com/go-zookeeper/zk@v1.0.4/conn.go:849 +0x6c4
  github.com/go-zookeeper/zk.(*Conn).loop.func2()
      /go/pkg/mod/github.com/go-zookeeper/zk@v1.0.4/conn.go:474 +0xe4

Previous read at 0x00c0001a2b48 by goroutine 41:
  github.com/go-zookeeper/zk.(*Conn).sendSetWatches()
      /go/pkg/mod/github.com/go-zookeeper/zk@v1.0.4/conn.go:614 +0x2b1
  github.com/go-zookeeper/zk.(*Conn).loop()
      /go/pkg/mod/github.com/go-zookeeper/zk@v1.0.4/conn.go:484 +0x4a4

Goroutine 88 (running) created at:
  github.com/go-zookeeper/zk.(*Conn).loop()
      /go/pkg/mod/github.com/go-zookeeper/zk@v1.0.4/conn.go:466 +0x3a4
`

const ownRace = `WARNING: DATA RACE
Write at 0x00c0001a2b48 by goroutine 88:
  github.com/zkrecipes/zkrecipes/framework.(*Client).bump()
      /w/framework/client.go:10 +0x6c4

Previous read at 0x00c0001a2b48 by goroutine 41:
  github.com/go-zookeeper/zk.(*Conn).sendSetWatches()
      /go/pkg/mod/github.com/go-zookeeper/zk@v1.0.4/conn.go:614 +0x2b1
`

func TestOnlyGoZookeepersRaceIsKnown(t *testing.T) {
	if !knownRace(zkRace) {
		t.Fatal("go-zookeeper's lastZxid race not recognised")
	}
	if knownRace(ownRace) {
		t.Fatal("a race with one access in our code recognised as go-zookeeper's")
	}
	if knownRace("WARNING: DATA RACE\n") {
		t.Fatal("a report with no accesses recognised")
	}
}

func pkgWith(out string, failed ...string) *pkgState {
	p := &pkgState{tests: map[string]*strings.Builder{}, failed: failed, verdict: "fail"}
	p.out.WriteString(out)
	for _, f := range failed {
		b := &strings.Builder{}
		b.WriteString("--- FAIL: " + f + "\n    testing.go:1712: race detected during execution of test\n")
		p.tests[f] = b
	}
	return p
}

func TestExcusedOnlyOnEvidence(t *testing.T) {
	report := func(r string) string { return "==================\n" + r + "==================\n" }
	cases := []struct {
		name   string
		p      *pkgState
		excuse bool
	}{
		{"go-zookeeper's race", pkgWith(report(zkRace), "TestA"), true},
		{"our race beside it", pkgWith(report(zkRace)+report(ownRace), "TestA"), false},
		{"no race report", pkgWith("--- FAIL: TestA\n", "TestA"), false},
		{"no failed test", pkgWith(report(zkRace)), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			why := excusable(c.p)
			if (why == "") != c.excuse {
				t.Fatalf("excused=%v, want %v (%s)", why == "", c.excuse, why)
			}
		})
	}
	// A test the detector did not fail is not excused by another's race.
	p := pkgWith(report(zkRace), "TestA")
	p.tests["TestA"].Reset()
	p.tests["TestA"].WriteString("--- FAIL: TestA\n    a_test.go:9: wrong\n")
	if excusable(p) == "" {
		t.Fatal("a test that failed on its own was excused")
	}
}

// End to end on a module of its own: a test that races in its own code
// fails the run, a test that passes passes it.
func TestRunFailsOnOwnRaceAndPassesClean(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	bin := filepath.Join(t.TempDir(), "racegate")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	write("a_test.go", `package m

import "testing"

func TestClean(t *testing.T) {}

func TestRacy(t *testing.T) {
	x := 0
	done := make(chan bool)
	go func() { x++; done <- true }()
	x++
	<-done
}
`)
	run := func(pattern string) error {
		cmd := exec.Command(bin, "-race", "-count=1", "-run", pattern, "./...")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		t.Logf("%s", out)
		return err
	}
	if err := run("^TestClean$"); err != nil {
		t.Fatalf("a clean test failed the run: %v", err)
	}
	if err := run("^TestRacy$"); err == nil {
		t.Fatal("a race in the test's own code passed the run")
	}
}
