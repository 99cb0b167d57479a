package integration_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
)

// The README's quick starts are what a newcomer copies first, so they run
// here as written: the Go program is built in a module of its own that
// requires this one (as `go get` would), the functions of the leader,
// cache and discovery quick starts beside a main that calls each in a
// process of its own (as the README tells its reader to, from run), and
// the shell lines run
// one by one through bash with the zkr built from this checkout on PATH.
// All use the server the README starts, `zkr dev --port 2181 &`, on a
// free port instead of 2181 (other servers may hold it on a shared
// machine); with ZK_CONNECT set, the tests' external server stands in for
// it. Nothing else of the README's text is changed.
func TestREADMEQuickStartsRunAsWritten(t *testing.T) {
	root := moduleRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	goCode := quickStart(t, string(readme), "go", "go")
	moreCode := quickStart(t, string(readme), "go-more", "go")
	shLines := shellLines(quickStart(t, string(readme), "zkr", "sh"))

	// The zkr block starts the server first and stops it last; the test
	// does both itself, so that it knows when the server is up and can
	// stop it whatever happens in between.
	require.GreaterOrEqual(t, len(shLines), 3, "the zkr quick start: zkr dev, at least one command, kill %%1")
	devLine, stopLine, commands := shLines[0], shLines[len(shLines)-1], shLines[1:len(shLines)-1]
	require.Regexp(t, `^zkr dev --port 2181 &$`, devLine, "the zkr quick start starts with a server at zkr's default address")
	require.Equal(t, "kill %1", stopLine, "the zkr quick start ends by stopping zkr dev")
	require.Contains(t, goCode, `"127.0.0.1:2181"`, "the Go quick start dials the server zkr dev started")

	bin := buildZkr(t, root)
	servers := os.Getenv("ZK_CONNECT")
	if servers == "" {
		dev := startDev(t, bin)
		servers = dev.addr
		defer dev.stop(t) // kill %1: SIGTERM
	} else {
		t.Logf("ZK_CONNECT=%s: the README's zkr dev line is not run; its server stands in", servers)
	}

	t.Run("library", func(t *testing.T) {
		quoted := `"` + strings.Join(strings.Split(servers, ","), `", "`) + `"`
		out := runGoQuickStart(t, root, strings.Replace(goCode, `"127.0.0.1:2181"`, quoted, 1))
		require.Regexp(t, `holding /locks/billing with fencing token [1-9][0-9]*\n`, out)
	})

	t.Run("more", func(t *testing.T) {
		runMoreQuickStarts(t, root, moreCode, servers)
	})

	t.Run("zkr", func(t *testing.T) {
		dir := t.TempDir()
		for _, line := range commands {
			out := runShellLine(t, dir, filepath.Dir(bin), servers, line)
			if strings.Contains(line, "ZKR_FENCING_TOKEN") {
				require.Regexp(t, `(token|term) [1-9][0-9]*\n`, out, "%s: COMMAND got a fencing token", line)
			}
			if strings.Contains(line, "-- zkr ls ") {
				require.Regexp(t, `(?m)^1 +holds `, out, "%s: zkr ls shows the holder", line)
			}
		}
	})
}

// moduleRoot returns the directory of this module's go.mod: the
// repository's root, where README.md is, whichever module the
// integration tests end up in.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			regexp.MustCompile(`(?m)^module github\.com/zkrecipes/zkrecipes\s*$`).Match(mod) {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod of github.com/zkrecipes/zkrecipes above the test's directory")
		dir = parent
	}
}

// quickStart returns the code block of the README marked with
// "<!-- readme-test: name": the fenced block of language lang that
// follows the marker.
func quickStart(t *testing.T, readme, name, lang string) string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "<!-- readme-test: "+name)
	require.True(t, ok, "README.md has no <!-- readme-test: %s --> marker", name)
	_, rest, ok = strings.Cut(rest, "-->\n")
	require.True(t, ok, "the readme-test: %s marker is not closed", name)
	require.True(t, strings.HasPrefix(rest, "```"+lang+"\n"), "the readme-test: %s marker is not right before a ```%s block", name, lang)
	code, _, ok := strings.Cut(strings.TrimPrefix(rest, "```"+lang+"\n"), "```\n")
	require.True(t, ok, "the ```%s block after readme-test: %s does not end", lang, name)
	return code
}

// shellLines returns the commands of a shell block, one per line, without
// their comments. It knows what a quick start needs: quotes, comments, no
// continued lines.
func shellLines(block string) []string {
	var lines []string
	for _, line := range strings.Split(block, "\n") {
		if i := commentStart(line); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// commentStart is where a shell comment begins in line (a # at the start
// of a word, outside quotes), or -1.
func commentStart(line string) int {
	var quote byte
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return i
		}
	}
	return -1
}

// buildZkr builds the zkr of this checkout into a directory of its own,
// which becomes the shell lines' PATH. It builds in cmd/zkr, which works
// whether or not the command has a module of its own.
func buildZkr(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "zkr")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(root, "cmd", "zkr")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build zkr:\n%s", out)
	return bin
}

// dev is the README's `zkr dev --port 2181 &`, on a free port.
type dev struct {
	cmd    *exec.Cmd
	addr   string
	stderr testkit.SyncBuffer
	done   chan struct{} // closed once zkr dev has exited; err says how
	err    error
}

func startDev(t *testing.T, bin string) *dev {
	t.Helper()
	port := freePort(t)
	d := &dev{cmd: exec.Command(bin, "dev", "--port", strconv.Itoa(port)), done: make(chan struct{})}
	d.cmd.Env = userEnv()
	d.cmd.Stderr = &d.stderr
	stdout, err := d.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, d.cmd.Start())
	t.Cleanup(func() { // a test that failed before kill %1
		select {
		case <-d.done:
		default:
			_ = d.cmd.Process.Signal(syscall.SIGTERM)
			<-d.done
		}
	})
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		for sc.Scan() { // drain, so that zkr dev never blocks on its stdout
		}
		d.err = d.cmd.Wait()
		close(d.done)
	}()
	// A cold JVM on a loaded machine may take a while: as make demo, wait
	// up to 90 s for the address zkr dev prints first.
	select {
	case line, ok := <-first:
		require.True(t, ok, "zkr dev ended without printing its address:\n%s", d.stderr.String())
		d.addr = line
	case <-time.After(90 * time.Second):
		t.Fatalf("zkr dev printed no address in 90s:\n%s", d.stderr.String())
	}
	require.Equal(t, fmt.Sprintf("127.0.0.1:%d", port), d.addr, "zkr dev's first line is its address")
	return d
}

// stop is the README's `kill %1`: SIGTERM, after which zkr dev stops the
// server, removes its data and exits 0.
func (d *dev) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-d.done:
		require.NoError(t, d.err, "zkr dev after kill %%1:\n%s", d.stderr.String())
	case <-time.After(time.Minute):
		_ = d.cmd.Process.Kill()
		t.Fatalf("zkr dev still running a minute after kill %%1:\n%s", d.stderr.String())
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// userEnv is the environment a reader's shell would have: this process's,
// without zkr's own variables (ZKR_CONNECT would win over ZK_CONNECT) and
// without ZK_CONNECT, which the caller sets.
func userEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ZKR_") && !strings.HasPrefix(kv, "ZK_CONNECT=") {
			env = append(env, kv)
		}
	}
	return env
}

// runGoQuickStart builds code as the main package of a module of its own
// that requires this one, replaced by the checkout at root, and runs it.
func runGoQuickStart(t *testing.T, root, code string) string {
	t.Helper()
	return runQuickStart(t, buildQuickStart(t, root, map[string]string{"main.go": code}))
}

// buildQuickStart builds files as the main package of a module of its own
// that requires this one, replaced by the checkout at root, and returns
// the binary. The checkout's go.sum covers every dependency, and
// GOPROXY=off keeps the build to the module cache: no network.
func buildQuickStart(t *testing.T, root string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	goLine := regexp.MustCompile(`(?m)^go \S+$`).Find(mod)
	require.NotNil(t, goLine, "no go line in go.mod")
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), fmt.Appendf(nil,
		"module example.com/quickstart\n\n%s\n\nrequire github.com/zkrecipes/zkrecipes v0.0.0\n\nreplace github.com/zkrecipes/zkrecipes => %s\n",
		goLine, root), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
	var all []string
	for name, code := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(code), 0o644))
		all = append(all, "// "+name+"\n"+code)
	}

	build := exec.Command("go", "build", "-o", "quickstart", ".")
	build.Dir = dir
	build.Env = append(userEnv(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "the README's Go quick start does not build:\n%s\n%s", out, strings.Join(all, "\n"))
	return filepath.Join(dir, "quickstart")
}

// runQuickStart runs a quick start's binary with args; it must exit 0
// within a minute. It returns its stdout.
func runQuickStart(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, bin, args...)
	run.Env = userEnv()
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	require.NoError(t, run.Run(), "the README's Go quick start %v failed:\nstdout: %s\nstderr: %s", args, &stdout, &stderr)
	return stdout.String()
}

// moreQuickStarts is what each function of the README's go-more block
// prints when it ran as it should. The test fails if the README's
// functions and these differ, so that a new quick start comes with what
// it must print.
var moreQuickStarts = map[string]*regexp.Regexp{
	"lead":  regexp.MustCompile(`^leading with fencing token [1-9][0-9]*\n$`),
	"watch": regexp.MustCompile(`^created /config/app/flag on\n$`),
	"serve": regexp.MustCompile(`^billing at 10\.0\.0\.7 8080\n$`),
}

// moreMain is the main the README's reader writes around the go-more
// block's functions: a client, as the mutex quick start dials it, and a
// call of the function named on the command line.
const moreMain = `package main

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := framework.Dial(ctx, []string{SERVERS})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	run := map[string]func(context.Context, *framework.Client) error{FUNCS}[os.Args[1]]
	if err := run(ctx, client); err != nil {
		log.Fatal(err)
	}
}
`

// runMoreQuickStarts builds the go-more block beside moreMain and runs
// each of its functions, in a process of its own, against servers.
func runMoreQuickStarts(t *testing.T, root, code, servers string) {
	t.Helper()
	var names, entries []string
	for _, m := range regexp.MustCompile(`(?m)^func (\w+)\(ctx context\.Context, client \*framework\.Client\) error \{$`).FindAllStringSubmatch(code, -1) {
		names = append(names, m[1])
		entries = append(entries, fmt.Sprintf("%q: %s", m[1], m[1]))
	}
	want := slices.Sorted(maps.Keys(moreQuickStarts))
	require.ElementsMatch(t, want, names, "the go-more quick start's functions and what the test expects of them")
	quoted := `"` + strings.Join(strings.Split(servers, ","), `", "`) + `"`
	main := strings.NewReplacer("SERVERS", quoted, "FUNCS", strings.Join(entries, ", ")).Replace(moreMain)
	bin := buildQuickStart(t, root, map[string]string{"main.go": main, "more.go": code})
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			require.Regexp(t, moreQuickStarts[name], runQuickStart(t, bin, name))
		})
	}
}

// runShellLine runs one line of the zkr quick start through bash, as a
// reader who pasted it: in dir, with zkr on PATH and ZK_CONNECT naming the
// server. It must exit 0 within a minute; it returns its stdout.
func runShellLine(t *testing.T, dir, binDir, servers, line string) string {
	t.Helper()
	cmd := exec.Command("bash", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(userEnv(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "ZK_CONNECT="+servers)
	// A process group of its own, so that a line that hangs is killed
	// whole (zkr's supervisor then ends COMMAND).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", line, exit.ExitCode(), &stdout, &stderr)
		}
		require.NoError(t, err, line)
	case <-time.After(time.Minute):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("%s: still running after a minute\nstdout: %s\nstderr: %s", line, &stdout, &stderr)
	}
	t.Logf("$ %s\n%s", line, &stdout)
	return stdout.String()
}
