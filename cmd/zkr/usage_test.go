package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A mistake on the command line is one line on stderr and status 2, found
// before anything is sent: the server must be untouched.
func TestUsageErrorsExit2WithOneLineAndCreateNothing(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	for name, a := range map[string][]string{
		"unknown flag":                {"lock", "--bogus", "/p", "--", "true"},
		"relative path":               {"lock", "p", "--", "true"},
		"trailing slash":              {"wlock", "/p/", "--", "true"},
		"double slash":                {"rlock", "/a//b", "--", "true"},
		"root":                        {"lock", "/", "--", "true"},
		"missing path":                {"lock"},
		"elect missing command":       {"elect", "/p"},
		"-c and a command":            {"lock", "-c", "echo x", "/p", "--", "true"},
		"empty -c":                    {"lock", "/p", "-c", ""},
		"bad -w":                      {"lock", "-w", "2,5", "/p", "--", "true"},
		"negative -w":                 {"lock", "-w", "-1", "/p", "--", "true"},
		"-E out of range":             {"lock", "-n", "-E", "256", "/p", "--", "true"},
		"zero lease":                  {"lock", "--lease", "0", "/p"},
		"lease shorter than grace":    {"lock", "--lease", "1s", "--grace", "1s", "/p", "--", "true"},
		"elect --requeue -n":          {"elect", "--requeue", "-n", "/p", "--", "true"},
		"elect --requeue -w":          {"elect", "--requeue", "-w", "5", "/p", "--", "true"},
		"elect --lease":               {"elect", "--lease", "5s", "/p", "--", "true"},
		"bad duration":                {"lock", "--timeout", "soon", "/p", "--", "true"},
		"negative grace":              {"lock", "--grace", "-1s", "/p", "--", "true"},
		"sem without max":             {"sem", "/p", "--", "true"},
		"elect bad path":              {"elect", "/p/../q", "--", "true"},
		"leader extra argument":       {"leader", "/p", "extra"},
		"leader --watch extra":        {"leader", "--watch", "/p", "extra"},
		"leader unknown output":       {"leader", "-o", "yaml", "/p"},
		"leader output, no format":    {"leader", "/p", "--output"},
		"ls missing path":             {"ls"},
		"ls extra argument":           {"ls", "/p", "extra"},
		"ls relative path":            {"ls", "p"},
		"ls bad output":               {"ls", "--output", "xml", "/p"},
		"watch missing path":          {"watch"},
		"watch root":                  {"watch", "/"},
		"watch extra argument":        {"watch", "/p", "extra"},
		"watch negative depth":        {"watch", "--depth", "-1", "/p"},
		"watch depth not a number":    {"watch", "--depth", "two", "/p"},
		"watch depth and children":    {"watch", "--depth", "1", "--children", "/p"},
		"watch --watch":               {"watch", "--watch", "/p"},
		"members missing path":        {"members"},
		"members relative path":       {"members", "g"},
		"members extra argument":      {"members", "/g", "extra"},
		"members bad output":          {"members", "-o", "yaml", "/g"},
		"services name with a slash":  {"services", "a/b"},
		"services name ..":            {"services", ".."},
		"services extra argument":     {"services", "a", "b"},
		"services bad base":           {"services", "--base", "services"},
		"services bad output":         {"services", "-o", "xml"},
		"completion without a shell":  {"completion"},
		"completion of a new shell":   {"completion", "tcsh"},
		"completion of two shells":    {"completion", "bash", "zsh"},
		"zero session timeout":        {"--session-timeout", "0s", "lock", "/p", "--", "true"},
		"session timeout > int32 ms":  {"--session-timeout", "720h", "lock", "/p", "--", "true"},
		"session timeout, no slack":   {"--session-timeout", "300ms", "lock", "/p", "--", "true"},
		"session timeout, 1ms slack":  {"--session-timeout", "303ms", "lock", "/p", "--", "true"},
		"session timeout, too short":  {"--session-timeout", "899ms", "lock", "/p", "--", "true"},
		"elect, no slack":             {"elect", "--session-timeout", "250ms", "/p", "--", "true"},
		"auth without password":       {"--auth", "nobody", "lock", "/p", "--", "true"},
		"empty auth":                  {"--auth", "", "lock", "/p", "--", "true"},
		"empty auth file":             {"lock", "--auth-file", "", "/p", "--", "true"},
		"missing TLS CA":              {"--tls-ca", "/nonexistent/ca.pem", "lock", "/p", "--", "true"},
		"TLS cert without key":        {"lock", "--tls-cert", "/etc/hostname", "/p", "--", "true"},
		"bad connect string":          {"--connect", "localhost:http", "lock", "/p", "--", "true"},
		"bad namespace":               {"--namespace", "a//b", "lock", "/p", "--", "true"},
		"unknown subcommand":          {"frobnicate"},
		"no subcommand":               {},
		"dev with an argument":        {"dev", "now"},
		"global flag after path":      {"lock", "/p", "--session-timeout", "x", "--", "true"},
		"empty id":                    {"--id", "", "lock", "/p", "--", "true"},
		"id with a newline":           {"lock", "--id", "a\nb", "/p", "--", "true"},
		"id with a control character": {"leader", "--id", "a\x1b[2Jb", "/p"},
		"metrics address, no port":    {"--metrics-addr", "bogus", "lock", "/p", "--", "true"},
		"metrics address, bad port":   {"ls", "--metrics-addr", "127.0.0.1:nope", "/p"},
		"mistyped subcommand":         {"lcok", "/p", "--", "true"},
		"acl creator, no password":    {"--acl", "creator", "lock", "/p", "--", "true"},
		"unknown acl":                 {"--acl", "world", "--auth", "a:b", "lock", "/p", "--", "true"},
		"a former subcommand":         {"bench", "--mode", "keys"},
	} {
		t.Run(name, func(t *testing.T) {
			r := zkr(t, args(connect, a)...)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Empty(t, r.stdout)
			assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "want one line, got:\n%s", r.stderr)
			assert.Contains(t, r.stderr, "--help")
		})
	}
	r := startWith(t, []string{"ZKR_OUTPUT=yaml"}, args(connect, cmd("ls", "/p"))...).wait(t, time.Minute)
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "ZKR_OUTPUT")
	assert.ElementsMatch(t, []string{"zookeeper"}, children(t, c, "/"), "a usage error touched the server")
}

// A session timeout that leaves no time to stop COMMAND between the moment
// the hold is in doubt (2/3 of it) and the moment the server may grant it
// elsewhere (all of it, less a margin) is refused, with the reason and the
// bound. Before, zkr ran COMMAND with a watchdog of zero.
func TestSessionTimeoutWithoutSlackIsRefused(t *testing.T) {
	r := zkr(t, "--connect", "127.0.0.1:1", "--session-timeout", "300ms", "lock", "/x", "--", "true")
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--session-timeout 300ms: too short")
	assert.Contains(t, r.stderr, "at least "+minSessionTimeout.String())
	r = startWith(t, []string{"ZKR_SESSION_TIMEOUT=100ms"}, "--connect", "127.0.0.1:1", "elect", "/x", "--", "true").wait(t, time.Minute)
	assert.Equal(t, exitUsage, r.code, r.stderr)
	// Just above: the watchdog was under a millisecond, and COMMAND was
	// killed at once (122).
	r = zkr(t, "--connect", "127.0.0.1:1", "--session-timeout", "310ms", "lock", "/x", "--", "true")
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--session-timeout 310ms: too short")
	assert.Equal(t, minBudget, graceBudget(minSessionTimeout), "the shortest session timeout taken has the least budget")
}

func TestHelpReadsLikeAManPage(t *testing.T) {
	sections := []string{"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "ENVIRONMENT", "EXAMPLES"}
	for _, a := range [][]string{
		{"--help"}, {"help"}, {"-h"},
		{"lock", "--help"}, {"rlock", "--help"}, {"wlock", "--help"}, {"sem", "--help"},
		{"elect", "--help"}, {"leader", "--help"}, {"dev", "--help"},
		{"ls", "--help"}, {"help", "ls"}, {"completion", "--help"},
		{"watch", "--help"}, {"members", "--help"}, {"services", "--help"}, {"help", "services"},
		{"help", "lock"},
	} {
		t.Run(strings.Join(a, " "), func(t *testing.T) {
			r := zkr(t, a...)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Empty(t, r.stderr)
			last := -1
			for _, s := range sections {
				i := strings.Index(r.stdout, "\n"+s+"\n")
				if s == "NAME" {
					i = strings.Index(r.stdout, s+"\n")
				}
				assert.Greater(t, i, last, "section %s missing or out of order", s)
				last = i
			}
		})
	}
}

// The ENVIRONMENT section of every subcommand that takes the global options
// names their ZKR_ variables (it named ZK_CONNECT alone), and the manual
// gives 122 both of its meanings.
func TestManualsNameTheVariablesAndWhat122Means(t *testing.T) {
	for _, sub := range []string{"lock", "rlock", "wlock", "sem", "elect", "leader", "ls", "watch", "members", "services"} {
		r := zkr(t, sub, "--help")
		_, env, _ := strings.Cut(r.stdout, "\nENVIRONMENT\n")
		env, _, _ = strings.Cut(env, "\nEXAMPLES\n")
		for _, v := range []string{"ZKR_CONNECT", "ZK_CONNECT", "ZKR_SESSION_TIMEOUT", "ZKR_AUTH_FILE", "ZKR_ID", "ZKR_VERBOSE"} {
			assert.Contains(t, env, v, "zkr %s --help: ENVIRONMENT does not name %s", sub, v)
		}
		if heldKinds[sub] != "" {
			assert.Contains(t, strings.Join(strings.Fields(r.stdout), " "), "killed on resume", "zkr %s --help: 122", sub)
		}
	}
}

// Global options work before and after the subcommand; --namespace,
// --auth and the TLS options reach the server.
func TestGlobalOptionsReachTheServer(t *testing.T) {
	tl := zktest.NewTLS(t)
	cl := zktest.Standalone(t, zktest.WithMutualTLS(tl))
	c := client(t, cl)
	tlsArgs := []string{"--connect", cl.SecureConnectString(), "--tls-ca", tl.CAFile, "--tls-cert", tl.ClientPEM, "--tls-key", tl.ClientPEM}

	done := filepath.Join(t.TempDir(), "done")
	p := start(t, args(tlsArgs, cmd("--namespace", "app", "lock", "--auth", "user:secret", "/ns/job"),
		sh(`echo $ZKR_LOCK_PATH; `+waitFile(done)))...)
	p.expectLine(t, "/ns/job") // PATH as given, without the namespace
	assert.Len(t, children(t, c, "/app/ns/job"), 1, "the lock was not taken under the namespace")
	require.NoError(t, touch(done))
	r := p.wait(t, 30*time.Second)
	require.Equal(t, 0, r.code, r.stderr)

	r = zkr(t, "--connect", cl.SecureConnectString(), "--tls-ca", tl.CAFile, "--dial-timeout", "2s", "lock", "/x", "--", "true")
	assert.Equal(t, exitFailed, r.code, "a mutual-TLS server must refuse a client without a certificate: %s", r.stderr)
}

// zkr bench is no more: the benchmarks are a command of their own,
// zkr-bench, and zkr says so (and how to install it) to whoever runs the
// old subcommand or asks for its manual.
func TestBenchSaysItIsACommandOfItsOwnNow(t *testing.T) {
	for _, a := range [][]string{{"bench", "--mode", "keys"}, {"bench"}, {"help", "bench"}} {
		r := zkr(t, a...)
		assert.Equal(t, exitUsage, r.code, r.stderr)
		assert.Empty(t, r.stdout)
		assert.Contains(t, r.stderr, "zkr-bench")
		assert.Contains(t, r.stderr, "go install github.com/zkrecipes/zkrecipes/cmd/zkr-bench@latest")
		assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "want one line, got:\n%s", r.stderr)
	}
	r := zkr(t, "--help")
	assert.NotContains(t, r.stdout, "zkr bench")
}

// A value from the environment is blamed on its variable, not on the
// option the user never typed: ZKR_SESSION_TIMEOUT=500ms said
// "--session-timeout 500ms: too short".
func TestBadEnvironmentIsBlamedOnItsVariable(t *testing.T) {
	_, connect := server(t)
	// Nowhere to connect, should a mistake be missed (the last of a
	// variable given twice wins).
	nowhere := []string{"ZKR_CONNECT=127.0.0.1:1", "ZKR_DIAL_TIMEOUT=1s"}
	for name, tc := range map[string]struct {
		env  []string
		args []string
		flag string // the option it must not blame
	}{
		"ZKR_SESSION_TIMEOUT too short":    {[]string{"ZKR_SESSION_TIMEOUT=500ms"}, cmd("lock", "/p", "--", "true"), "--session-timeout"},
		"ZKR_SESSION_TIMEOUT short, elect": {[]string{"ZKR_SESSION_TIMEOUT=500ms"}, cmd("elect", "/p", "--", "true"), "--session-timeout"},
		"ZKR_SESSION_TIMEOUT zero":         {[]string{"ZKR_SESSION_TIMEOUT=0s"}, cmd("ls", "/p"), "--session-timeout"},
		"ZKR_SESSION_TIMEOUT above limit":  {[]string{"ZKR_SESSION_TIMEOUT=720h"}, cmd("leader", "/p"), "--session-timeout"},
		"ZKR_DIAL_TIMEOUT negative":        {[]string{"ZKR_DIAL_TIMEOUT=-1s"}, cmd("lock", "/p", "--", "true"), "--dial-timeout"},
		"ZKR_CONNECT bad port":             {[]string{"ZKR_CONNECT=localhost:http"}, cmd("lock", "/p", "--", "true"), "--connect"},
		"ZK_CONNECT bad port":              {[]string{"ZKR_CONNECT=", "ZK_CONNECT=localhost:http"}, cmd("lock", "/p", "--", "true"), "--connect"},
		"ZKR_NAMESPACE invalid":            {[]string{"ZKR_NAMESPACE=a//b"}, cmd("lock", "/p", "--", "true"), "--namespace"},
		"ZKR_ID with a newline":            {[]string{"ZKR_ID=a\nb"}, cmd("lock", "/p", "--", "true"), "--id"},
		"ZKR_METRICS_ADDR without a port":  {[]string{"ZKR_METRICS_ADDR=bogus"}, cmd("lock", "/p", "--", "true"), "--metrics-addr"},
		"ZKR_TLS_CA missing":               {[]string{"ZKR_TLS_CA=/nonexistent/ca.pem"}, cmd("lock", "/p", "--", "true"), "--tls-ca"},
		"ZKR_TLS_CERT without a key":       {[]string{"ZKR_TLS_CERT=/etc/hostname"}, cmd("lock", "/p", "--", "true"), "--tls-cert"},
		"ZKR_AUTH without a password":      {[]string{"ZKR_AUTH=nobody"}, cmd("lock", "/p", "--", "true"), "--auth"},
		"ZKR_AUTH_FILE missing":            {[]string{"ZKR_AUTH_FILE=/nonexistent/auth"}, cmd("lock", "/p", "--", "true"), "--auth-file"},
	} {
		t.Run(name, func(t *testing.T) {
			variable, _, _ := strings.Cut(tc.env[len(tc.env)-1], "=")
			r := startWith(t, append(nowhere, tc.env...), tc.args...).wait(t, time.Minute)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "want one line, got:\n%s", r.stderr)
			assert.Contains(t, r.stderr, variable)
			assert.NotContains(t, r.stderr, tc.flag+" ", "blames the option, not the variable")
			assert.NotContains(t, r.stderr, tc.flag+":", "blames the option, not the variable")
		})
	}
	// The option, given, wins over a variable that does not parse.
	r := startWith(t, []string{"ZKR_DIAL_TIMEOUT=soon", "ZKR_SESSION_TIMEOUT=500ms"},
		args(connect, cmd("--dial-timeout", "20s", "lock", "--session-timeout", "4s", "/p"), sh("echo ran"))...).wait(t, time.Minute)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "ran\n", r.stdout)
}

// The option's own mistake is still the option's.
func TestBadOptionIsBlamedOnTheOption(t *testing.T) {
	r := startWith(t, []string{"ZKR_SESSION_TIMEOUT=4s"}, "--connect", "127.0.0.1:1", "--session-timeout", "500ms", "lock", "/p", "--", "true").wait(t, time.Minute)
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--session-timeout 500ms: too short")
	r = startWith(t, []string{"ZKR_ID=fine"}, "--connect", "127.0.0.1:1", "--dial-timeout", "1s", "lock", "--id", "", "/p", "--", "true").wait(t, time.Minute)
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--id '': empty")
}

// A mistyped subcommand gets the nearest ones by edit distance, with 2
// and nothing contacted; a word near none gets none.
func TestMistypedSubcommandSuggestsTheNearest(t *testing.T) {
	for typed, want := range map[string]string{
		"lcok":     `unknown subcommand "lcok"; did you mean "lock"?`,
		"elcet":    `did you mean "elect"?`,
		"versoin":  `did you mean "version"?`,
		"lss":      `did you mean "ls"?`,
		"complete": `did you mean "completion"?`,
		"wlok":     `did you mean "wlock"?`,
	} {
		for _, a := range [][]string{{typed, "/p"}, {"help", typed}} {
			r := zkr(t, args([]string{"--connect", "127.0.0.1:1"}, a)...)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Contains(t, r.stderr, want, "zkr %v", a)
			assert.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
		}
	}
	r := zkr(t, "frobnicate")
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "did you mean")
}
