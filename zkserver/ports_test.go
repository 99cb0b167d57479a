package zkserver

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// A port FreePorts handed out is held against every other caller until
// released, though nothing listens on it yet: a second test binary drawing
// it meanwhile gave one port to two servers.
func TestFreePortsHoldsItsPortsUntilReleased(t *testing.T) {
	ports, release, err := FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ports {
		if f, ok := reservePort(p); ok {
			f.Close()
			t.Fatalf("port %d handed out again while held", p)
		}
		if heldElsewhere(t, p) != "held" {
			t.Fatalf("another process could take port %d while held", p)
		}
	}
	release()
	release() // more than once is safe
	for _, p := range ports {
		f, ok := reservePort(p)
		if !ok {
			t.Fatalf("port %d still held after release", p)
		}
		f.Close()
	}
}

// heldElsewhere asks a child process (this test binary again) whether it
// can take port's hold.
func heldElsewhere(t *testing.T, port int) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestReservePortChild$")
	cmd.Env = append(os.Environ(), "ZKSERVER_RESERVE_PORT="+strconv.Itoa(port))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if len(out) >= 4 && string(out[:4]) == "held" {
		return "held"
	}
	return string(out)
}

// TestReservePortChild is heldElsewhere's child; it does nothing on its own.
func TestReservePortChild(t *testing.T) {
	p, err := strconv.Atoi(os.Getenv("ZKSERVER_RESERVE_PORT"))
	if err != nil {
		t.Skip("run by heldElsewhere")
	}
	if f, ok := reservePort(p); ok {
		f.Close()
		os.Stdout.WriteString("free\n")
	} else {
		os.Stdout.WriteString("held\n")
	}
	os.Exit(0)
}
