package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// script writes zkr completion SHELL's script to a file and returns its
// path.
func script(t *testing.T, shell string) string {
	t.Helper()
	r := zkr(t, "completion", shell)
	require.Equal(t, 0, r.code, r.stderr)
	require.NotEmpty(t, r.stdout)
	assert.Empty(t, r.stderr)
	f := filepath.Join(t.TempDir(), "zkr."+shell)
	require.NoError(t, os.WriteFile(f, []byte(r.stdout), 0o644))
	return f
}

// Each script parses in its shell. A shell that is not installed is
// skipped, saying so: bash always is (the terminal tests need it), zsh
// and fish may not be.
func TestCompletionScriptsAreValidInTheirShells(t *testing.T) {
	for shell, check := range map[string][]string{
		"bash": {"bash", "-n"},
		"zsh":  {"zsh", "-n"},
		"fish": {"fish", "--no-execute"},
	} {
		t.Run(shell, func(t *testing.T) {
			if _, err := exec.LookPath(check[0]); err != nil {
				t.Skipf("%s is not installed (apt-get install %s): its script's syntax is not checked", check[0], check[0])
			}
			f := script(t, shell)
			out, err := exec.Command(check[0], append(check[1:], f)...).CombinedOutput()
			require.NoError(t, err, "%s rejects the script:\n%s", strings.Join(check, " "), out)
		})
	}
}

// complete runs bash's completion of words (as bash splits a command line:
// "=" is a word of its own) in a bash that sourced the script, from dir,
// and returns the offers, sorted.
func complete(t *testing.T, script, dir string, words ...string) []string {
	t.Helper()
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	prog := `source "$1" || exit 9
COMP_WORDS=(` + strings.Join(quoted, " ") + `)
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_LINE="${COMP_WORDS[*]}"
COMP_POINT=${#COMP_LINE}
fn=$(complete -p zkr | sed -n 's/.* -F \([^ ]*\) .*/\1/p')
"$fn" zkr "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
`
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", prog, "bash", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var got []string
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" {
			got = append(got, l)
		}
	}
	slices.Sort(got)
	return got
}

// Tab in bash offers what fits where the cursor is: subcommands, their
// options and the values some take, files where a file goes, and after
// -- the commands and files COMMAND takes.
func TestCompletionInBashOffersWhatFitsTheCursor(t *testing.T) {
	f := script(t, "bash")
	dir := t.TempDir()
	for _, name := range []string{"zkrtest-cmd", "data.txt", "dump.bin"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o755))
	}
	lsb := []string{"leader", "lock", "ls"}
	for name, tc := range map[string]struct {
		words []string
		want  []string // exactly these
		has   []string // at least these
		not   []string // none of these
	}{
		"subcommands":                    {words: []string{"zkr", "l"}, want: lsb},
		"after a global option":          {words: []string{"zkr", "--connect", "h:1", "l"}, want: lsb},
		"after --option=value":           {words: []string{"zkr", "--connect", "=", "h:1", "l"}, want: lsb},
		"after a switch":                 {words: []string{"zkr", "-v", "l"}, want: lsb},
		"every subcommand":               {words: []string{"zkr", ""}, has: []string{"completion", "dev", "elect", "help", "leader", "lock", "ls", "rlock", "sem", "version", "wlock"}},
		"global options":                 {words: []string{"zkr", "--"}, has: []string{"--connect", "--namespace", "--version", "--help"}},
		"ls options":                     {words: []string{"zkr", "ls", "-"}, has: []string{"--watch", "-w", "--output", "-o", "--connect", "--id", "--acl"}, not: []string{"--mode", "--version"}},
		"leader options":                 {words: []string{"zkr", "leader", "-"}, has: []string{"--watch", "-w", "--output", "-o", "--connect", "--id"}, not: []string{"--mode", "--version"}},
		"lock options":                   {words: []string{"zkr", "lock", "--"}, has: []string{"--timeout", "--nonblock", "--conflict-exit-code", "--grace", "--session-timeout"}, not: []string{"--max", "--requeue"}},
		"sem options":                    {words: []string{"zkr", "sem", "--ma"}, want: []string{"--max"}},
		"output formats":                 {words: []string{"zkr", "ls", "-o", ""}, want: []string{"json", "text"}},
		"ACLs":                           {words: []string{"zkr", "lock", "--acl", ""}, want: []string{"creator", "open"}},
		"a duration is not guessed":      {words: []string{"zkr", "lock", "--timeout", ""}, want: nil},
		"a file option takes files":      {words: []string{"zkr", "lock", "--auth-file", "d"}, want: []string{"data.txt", "dump.bin"}},
		"a ZooKeeper path is not a file": {words: []string{"zkr", "lock", "d"}, want: nil},
		"help topics":                    {words: []string{"zkr", "help", "l"}, want: lsb},
		"shells":                         {words: []string{"zkr", "completion", ""}, want: []string{"bash", "fish", "zsh"}},
		"COMMAND after --":               {words: []string{"zkr", "lock", "/p", "--", "zkrtest-c"}, want: []string{"zkrtest-cmd"}},
		"COMMAND's files":                {words: []string{"zkr", "--id", "x", "lock", "--timeout", "3s", "/p", "--", "cat", "d"}, want: []string{"data.txt", "dump.bin"}},
		"COMMAND's own options are its":  {words: []string{"zkr", "elect", "/p", "--", "zkrtest-cmd", "--"}, not: []string{"--requeue", "--connect"}},
	} {
		t.Run(name, func(t *testing.T) {
			got := complete(t, f, dir, tc.words...)
			if tc.want != nil || (tc.has == nil && tc.not == nil) {
				assert.Equal(t, tc.want, got)
			}
			for _, w := range tc.has {
				assert.Contains(t, got, w)
			}
			for _, w := range tc.not {
				assert.NotContains(t, got, w)
			}
		})
	}
}

// The scripts offer exactly the options each manual lists: an option
// added to a subcommand without its completion (or the other way round)
// fails here.
func TestCompletionKnowsEveryOptionOfEachManual(t *testing.T) {
	opt := regexp.MustCompile(`(?:^|[\s,])(--?[a-zA-Z][a-z-]*)`)
	cmds := subcommands()
	for _, c := range completionSpec() {
		if c.name == "help" {
			continue // not a subcommand with a manual of its own
		}
		t.Run(c.name, func(t *testing.T) {
			sub, ok := cmds[c.name]
			require.True(t, ok, "zkr has no subcommand %s", c.name)
			var listed []string
			for _, section := range []string{"OPTIONS", "GLOBAL OPTIONS"} {
				_, body, found := strings.Cut(sub.help, "\n"+section+"\n")
				if !found {
					continue
				}
				for _, l := range strings.Split(body, "\n") {
					if l != "" && !strings.HasPrefix(l, " ") {
						break // the next section
					}
					if !strings.HasPrefix(l, "    -") {
						continue // a description, not an option's line
					}
					names, _, _ := strings.Cut(strings.TrimSpace(l), "   ")
					for _, m := range opt.FindAllStringSubmatch(" "+names, -1) {
						if m[1] != "--version" { // zkr's own, before any subcommand
							listed = append(listed, m[1])
						}
					}
				}
			}
			var offered []string
			for _, o := range c.options() {
				offered = append(offered, o.flags()...)
			}
			slices.Sort(listed)
			slices.Sort(offered)
			assert.Equal(t, slices.Compact(listed), slices.Compact(offered), "the options of zkr %s --help (want) and of its completion (got)", c.name)
		})
	}
	var names []string
	for _, c := range completionSpec() {
		names = append(names, c.name)
	}
	for name := range cmds {
		assert.Contains(t, names, name, "zkr %s has no completion", name)
	}
}
