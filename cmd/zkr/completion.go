package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Shell completion. zkr's parser is its own (global options on either side
// of the subcommand, ZKR_ variables, PATH then -- COMMAND), so the scripts
// are too: written out from one table, completionSpec, which a test holds
// to the options each manual lists.

const completionHelp = `NAME
    zkr completion - print a shell completion script

SYNOPSIS
    zkr completion bash|zsh|fish

DESCRIPTION
    Prints a script that makes Tab complete zkr's subcommands, their
    options and the values some take (--output, --acl, files for
    --auth-file and the TLS options) in bash, zsh or fish. After --, Tab
    completes COMMAND and its arguments as if typed alone. ZooKeeper paths
    are not completed: that would need a server.

    bash   load it in the shell:      source <(zkr completion bash)
           or for every shell:        zkr completion bash > \
                                       ~/.local/share/bash-completion/completions/zkr
           (system-wide: /etc/bash_completion.d/zkr). With the
           bash-completion package, COMMAND's arguments get its own
           completion; without it, files.
    zsh    load it (after compinit):  source <(zkr completion zsh)
           or save it as _zkr in a directory of $fpath.
    fish   load it:                   zkr completion fish | source
           or save it:                zkr completion fish > \
                                       ~/.config/fish/completions/zkr.fish

OPTIONS
    None.

EXIT STATUS
    0      printed.
    2      Usage error: no shell, or one zkr has no script for.

ENVIRONMENT
    None read.

EXAMPLES
    echo 'source <(zkr completion bash)' >> ~/.bashrc
    zkr completion zsh > "${fpath[1]}/_zkr"
`

func runCompletion(a *app, _ *globals, args []string) int {
	fs := newFlagSet("completion")
	var shell string
	code, ok := a.parseArgs("completion", completionHelp, func() error {
		if err := fs.Parse(args); err != nil {
			return err
		}
		switch rest := fs.Args(); {
		case len(rest) == 0:
			return errors.New("missing shell: bash, zsh or fish")
		case len(rest) > 1:
			return fmt.Errorf("unexpected argument %q", rest[1])
		default:
			shell = rest[0]
		}
		if !slices.Contains(completionShells, shell) {
			return fmt.Errorf("no script for %q: want bash, zsh or fish", shell)
		}
		return nil
	})
	if !ok {
		return code
	}
	write := map[string]func(io.Writer, []compCommand){"bash": bashCompletion, "zsh": zshCompletion, "fish": fishCompletion}[shell]
	write(a.stdout, completionSpec())
	return 0
}

var completionShells = []string{"bash", "zsh", "fish"}

// compCommand is what completion knows of a subcommand.
type compCommand struct {
	name    string
	summary string
	opts    []compOption
	globals bool     // takes the global options
	words   []string // its one argument is one of these
}

// compOption is one option: its names, and what its value is.
type compOption struct {
	long, short string   // without dashes; either may be empty
	value       string   // "" for a switch; else what the value is, as the manual names it
	words       []string // the values it takes, if they are few
	summary     string
}

// file is the value of an option whose value is a file.
const file = "FILE"

// flags are the option's names with their dashes.
func (o compOption) flags() []string {
	var f []string
	if o.short != "" {
		f = append(f, "-"+o.short)
	}
	if o.long != "" {
		f = append(f, "--"+o.long)
	}
	return f
}

// options are c's own options, then the global ones if it takes them.
func (c compCommand) options() []compOption {
	if !c.globals {
		return c.opts
	}
	return append(slices.Clone(c.opts), globalCompOptions...)
}

var globalCompOptions = []compOption{
	{long: "connect", value: "HOST:PORT", summary: "ZooKeeper servers"},
	{long: "session-timeout", value: "D", summary: "session timeout"},
	{long: "dial-timeout", value: "D", summary: "how long to wait for a session"},
	{long: "namespace", value: "NS", summary: "prefix every path with /NS"},
	{long: "auth-file", value: file, summary: "USER:PASSWORD from FILE"},
	{long: "auth", value: "USER:PASSWORD", summary: "digest credentials (visible in ps)"},
	{long: "acl", value: "ACL", words: []string{"open", "creator"}, summary: "who may change zkr's nodes"},
	{long: "tls-ca", value: file, summary: "PEM CA certificates"},
	{long: "tls-cert", value: file, summary: "PEM client certificate"},
	{long: "tls-key", value: file, summary: "PEM client key"},
	{long: "id", value: "ID", summary: "participant id"},
	{long: "metrics-addr", value: "HOST:PORT", summary: "serve /metrics and /healthz"},
	{long: "verbose", short: "v", summary: "say when zkr waits, holds and releases"},
	{long: "log-level", value: "LEVEL", words: []string{"debug", "info", "warn", "error"}, summary: "show the library's log from LEVEL up"},
	{long: "log-format", value: "FORMAT", words: []string{"text", "json"}, summary: "the library's log as text or json"},
	{long: "help", short: "h", summary: "show the manual"},
}

var (
	outputCompOption = compOption{long: "output", short: "o", value: "FORMAT", words: []string{"text", "json"}, summary: "text or json"}
	waitCompOptions  = []compOption{
		{long: "timeout", short: "w", value: "S", summary: "give up after S seconds (exit 124)"},
		{long: "nonblock", short: "n", summary: "do not wait if taken"},
		{long: "conflict-exit-code", short: "E", value: "N", summary: "exit status for -n"},
		{long: "command", short: "c", value: "CMD", summary: "run CMD with sh -c"},
		{long: "grace", value: "D", summary: "SIGTERM to SIGKILL on loss"},
	}
	heldCompOptions = append(slices.Clip(waitCompOptions),
		compOption{long: "lease", value: "D", summary: "the hold ends by itself after D"})
)

// anyKindCompOption is --any-kind, of the subcommands that hold.
var anyKindCompOption = compOption{long: "any-kind", summary: "queue beside another kind of lock"}

// completionSpec is every subcommand, as the scripts complete it.
func completionSpec() []compCommand {
	held := func(name, summary string, extra ...compOption) compCommand {
		return compCommand{name: name, summary: summary, opts: append(append(extra, anyKindCompOption), heldCompOptions...), globals: true}
	}
	cmds := []compCommand{
		held("lock", "run a command holding a mutex"),
		held("rlock", "run a command holding a read lock"),
		held("wlock", "run a command holding a write lock"),
		held("sem", "run a command holding a semaphore lease",
			compOption{long: "max", value: "N", summary: "the semaphore's maximum"}),
		{name: "elect", summary: "run a command while leading", globals: true, opts: append([]compOption{
			{long: "requeue", summary: "campaign again after each term"},
			anyKindCompOption,
		}, waitCompOptions...)},
		{name: "leader", summary: "print who leads a path, and the queue", globals: true, opts: []compOption{
			{long: "watch", short: "w", summary: "print every change of leader"},
			outputCompOption,
		}},
		{name: "ls", summary: "show who holds and who waits on a path", globals: true, opts: []compOption{
			{long: "watch", short: "w", summary: "show the queue live"},
			outputCompOption,
		}},
		{name: "watch", summary: "print the changes of a node or subtree", globals: true, opts: []compOption{
			{long: "depth", value: "N", summary: "follow N levels below PATH"},
			{long: "children", summary: "follow PATH's children only"},
			{long: "no-data", summary: "Stats only, not the data"},
			outputCompOption,
		}},
		{name: "members", summary: "show the members of a group", globals: true, opts: []compOption{
			{long: "watch", short: "w", summary: "print every join and leave"},
			outputCompOption,
		}},
		{name: "services", summary: "show discovery's services and instances", globals: true, opts: []compOption{
			{long: "base", value: "PATH", summary: "discovery's base path"},
			{long: "watch", short: "w", summary: "print every change"},
			outputCompOption,
		}},
		{name: "dev", summary: "run a throwaway local ZooKeeper", opts: []compOption{
			{long: "port", value: "P", summary: "port to listen on"},
		}},
		{name: "version", summary: "print zkr's version", opts: []compOption{
			{long: "help", short: "h", summary: "show the manual"},
		}},
		{name: "completion", summary: "print a shell completion script", words: completionShells},
	}
	var names []string
	for _, c := range cmds {
		names = append(names, c.name)
	}
	return append(cmds, compCommand{name: "help", summary: "show the manual of a subcommand", words: names})
}

// valued are the flags of opts that take a value, as the parser reads
// them: with one dash or two.
func valued(opts []compOption) []string {
	var out []string
	for _, o := range opts {
		if o.value == "" {
			continue
		}
		for _, f := range o.flags() {
			out = append(out, f)
			if strings.HasPrefix(f, "--") {
				out = append(out, f[1:]) // Go's flag takes -name too
			}
		}
	}
	return out
}

// topOptions are those before a subcommand: the global ones and
// --version.
func topOptions() []compOption {
	return append(slices.Clone(globalCompOptions), compOption{long: "version", summary: "print zkr's version"})
}

// valueArm is one option that takes a value, with the patterns that match
// it as SUBCOMMAND:FLAG ("zkr" before the subcommand, "*" for a global
// option, which goes on either side).
type valueArm struct {
	patterns []string
	opt      compOption
}

// valueArms are the options of spec that take a value, one arm each.
func valueArms(spec []compCommand) []valueArm {
	var arms []valueArm
	index := map[string]int{}
	add := func(sub string, o compOption) {
		if o.value == "" {
			return
		}
		key := o.long + "/" + o.short
		i, ok := index[key]
		if !ok {
			i = len(arms)
			index[key] = i
			arms = append(arms, valueArm{opt: o})
		}
		arms[i].patterns = append(arms[i].patterns, prefixed(sub+":", valued([]compOption{o}))...)
	}
	for _, o := range globalCompOptions {
		add("*", o)
	}
	for _, c := range spec {
		for _, o := range c.opts {
			add(c.name, o)
		}
	}
	return arms
}

func prefixed(p string, s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = p + v
	}
	return out
}

func flagsOf(opts []compOption) string {
	var out []string
	for _, o := range opts {
		out = append(out, o.flags()...)
	}
	return strings.Join(out, " ")
}

func commandNames(spec []compCommand, except string) string {
	var out []string
	for _, c := range spec {
		if c.name != except {
			out = append(out, c.name)
		}
	}
	return strings.Join(out, " ")
}

func bashCompletion(w io.Writer, spec []compCommand) {
	var skip, values, opts, args strings.Builder
	for _, a := range valueArms(spec) {
		pats := strings.Join(a.patterns, "|")
		fmt.Fprintf(&skip, "            %s) zkr_value=1 ;;\n", pats)
		switch o := a.opt; {
		case o.value == file:
			fmt.Fprintf(&values, "        %s)\n            compopt -o filenames 2>/dev/null\n            COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n", pats)
		case len(o.words) > 0:
			fmt.Fprintf(&values, "        %s)\n            COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", pats, strings.Join(o.words, " "))
		default:
			fmt.Fprintf(&values, "        %s) ;; # %s: nothing to guess\n", pats, o.value)
		}
	}
	for _, c := range spec {
		fmt.Fprintf(&opts, "        %s) words=%q ;;\n", c.name, flagsOf(c.options()))
		if len(c.words) > 0 {
			fmt.Fprintf(&args, "        %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", c.name, strings.Join(c.words, " "))
		}
	}
	fmt.Fprintf(w, `# bash completion for zkr, from zkr completion bash. Load it with
#   source <(zkr completion bash)
# or, for every shell,
#   zkr completion bash > ~/.local/share/bash-completion/completions/zkr

_zkr() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    COMPREPLY=()
    # The subcommand, and the -- after it, past the options and the values
    # of those that take one: --opt value, or --opt = value (bash splits
    # --opt=value so).
    local i w sub= dashdash=0 zkr_value
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [[ -n $sub && $w == -- ]]; then
            dashdash=$i
            break
        fi
        zkr_value=0
        case ${sub:-zkr}:$w in
%s            *:-*) ;;
            zkr:*) sub=$w ;;
        esac
        if ((zkr_value)); then
            ((i++))
            [[ ${COMP_WORDS[i]} == = ]] && ((i++))
        fi
    done
    if ((dashdash)); then
        # COMMAND and its arguments, completed as if typed alone.
        if declare -F _command_offset >/dev/null; then
            _command_offset $((dashdash + 1))
        elif ((COMP_CWORD == dashdash + 1)); then
            COMPREPLY=($(compgen -c -- "$cur"))
        else
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return
    fi
    [[ $prev == = ]] && prev=${COMP_WORDS[COMP_CWORD-2]}
    # The value of the option before the cursor.
    case ${sub:-zkr}:$prev in
%s        *)
            if [[ -z $sub && $cur == -* ]]; then
                COMPREPLY=($(compgen -W %q -- "$cur"))
            elif [[ -z $sub ]]; then
                COMPREPLY=($(compgen -W %q -- "$cur"))
            elif [[ $cur == -* ]]; then
                local words=
                case $sub in
%s                esac
                COMPREPLY=($(compgen -W "$words" -- "$cur"))
            else
                case $sub in
%s                esac
            fi ;;
    esac
}

complete -F _zkr zkr
`, skip.String(), values.String(), flagsOf(topOptions()), commandNames(spec, ""), indent(opts.String(), 8), indent(args.String(), 8))
}

// indent puts n more spaces before each line of s.
func indent(s string, n int) string {
	if s == "" {
		return ""
	}
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+pad) + "\n"
}

func zshCompletion(w io.Writer, spec []compCommand) {
	var skip, values, subs, opts, args strings.Builder
	for _, a := range valueArms(spec) {
		pats := strings.Join(a.patterns, "|")
		fmt.Fprintf(&skip, "      (%s) zkr_value=1 ;;\n", pats)
		switch o := a.opt; {
		case o.value == file:
			fmt.Fprintf(&values, "    (%s) _files ;;\n", pats)
		case len(o.words) > 0:
			fmt.Fprintf(&values, "    (%s) compadd -- %s ;;\n", pats, strings.Join(o.words, " "))
		default:
			fmt.Fprintf(&values, "    (%s) _message -e values %s ;;\n", pats, zshQuote(o.value+": "+o.summary))
		}
	}
	described := func(opts []compOption) string {
		var out []string
		for _, o := range opts {
			for _, f := range o.flags() {
				out = append(out, zshQuote(f+":"+o.summary))
			}
		}
		return strings.Join(out, " ")
	}
	for _, c := range spec {
		fmt.Fprintf(&subs, "    %s\n", zshQuote(c.name+":"+c.summary))
		fmt.Fprintf(&opts, "(%s) zkr_opts=(%s) ;;\n", c.name, described(c.options()))
		if len(c.words) > 0 {
			fmt.Fprintf(&args, "(%s) compadd -- %s ;;\n", c.name, strings.Join(c.words, " "))
		}
	}
	fmt.Fprintf(w, `#compdef zkr
# zsh completion for zkr, from zkr completion zsh. Load it (after
# compinit) with
#   source <(zkr completion zsh)
# or save it as _zkr in a directory of $fpath.

_zkr() {
  local -a zkr_subcommands zkr_opts
  zkr_subcommands=(
%s  )
  # The subcommand, and the -- after it, past the options and the values
  # of those that take one.
  local i w sub= dashdash=0 zkr_value
  for (( i = 2; i < CURRENT; i++ )); do
    w=${words[i]}
    if [[ -n $sub && $w == -- ]]; then
      dashdash=$i
      break
    fi
    zkr_value=0
    case ${sub:-zkr}:$w in
%s      (*:-*) ;;
      (zkr:*) sub=$w ;;
    esac
    (( zkr_value )) && (( i++ ))
  done
  if (( dashdash )); then
    # COMMAND and its arguments, completed as if typed alone.
    words=("${(@)words[dashdash+1,-1]}")
    (( CURRENT -= dashdash ))
    _normal
    return
  fi
  local prev=${words[CURRENT-1]}
  if [[ $PREFIX == -*=* ]]; then
    prev=${PREFIX%%%%=*}
    compset -P '*='
  fi
  # The value of the option before the cursor.
  case ${sub:-zkr}:$prev in
%s    (*)
      if [[ -z $sub && $PREFIX == -* ]]; then
        zkr_opts=(%s)
        _describe -t options 'zkr option' zkr_opts
      elif [[ -z $sub ]]; then
        _describe -t commands 'zkr subcommand' zkr_subcommands
      elif [[ $PREFIX == -* ]]; then
        case $sub in
%s        esac
        _describe -t options "zkr $sub option" zkr_opts
      else
        case $sub in
%s        esac
      fi ;;
  esac
}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  _zkr "$@"
else
  compdef _zkr zkr
fi
`, subs.String(), skip.String(), values.String(), described(topOptions()), indent(opts.String(), 10), indent(args.String(), 10))
}

// zshQuote quotes s for zsh (and fish): single quotes, each ' as '\”.
func zshQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func fishCompletion(w io.Writer, spec []compCommand) {
	var top []string
	for _, a := range valueArms(spec) {
		for _, p := range a.patterns {
			if f, ok := strings.CutPrefix(p, "*:"); ok {
				top = append(top, f)
			}
		}
	}
	var b strings.Builder
	option := func(cond string, o compOption) {
		fmt.Fprintf(&b, "complete -c zkr -n %s", zshQuote(cond))
		if o.short != "" {
			fmt.Fprintf(&b, " -s %s", o.short)
		}
		if o.long != "" {
			fmt.Fprintf(&b, " -l %s", o.long)
		}
		switch {
		case o.value == file:
			b.WriteString(" -r -F")
		case len(o.words) > 0:
			fmt.Fprintf(&b, " -x -a %s", zshQuote(strings.Join(o.words, " ")))
		case o.value != "":
			b.WriteString(" -x")
		}
		fmt.Fprintf(&b, " -d %s\n", zshQuote(o.summary))
	}
	b.WriteString("\n# Subcommands, and the options before them.\n")
	for _, c := range spec {
		fmt.Fprintf(&b, "complete -c zkr -n __zkr_top -a %s -d %s\n", c.name, zshQuote(c.summary))
	}
	for _, o := range topOptions() {
		option("__zkr_top", o)
	}
	for _, c := range spec {
		fmt.Fprintf(&b, "\n# zkr %s\n", c.name)
		cond := "__zkr_using " + c.name
		for _, o := range c.options() {
			option(cond, o)
		}
		if len(c.words) > 0 {
			fmt.Fprintf(&b, "complete -c zkr -n %s -x -a %s\n", zshQuote(cond), zshQuote(strings.Join(c.words, " ")))
		}
	}
	fmt.Fprintf(w, `# fish completion for zkr, from zkr completion fish. Load it with
#   zkr completion fish | source
# or save it:
#   zkr completion fish > ~/.config/fish/completions/zkr.fish

# __zkr_state prints the subcommand, then 1 if a -- follows it (COMMAND
# has begun) or 0; nothing before the subcommand. It skips the options
# and the values of those that take one.
function __zkr_state
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l skip 0
    set -l sub
    for t in $tokens
        if test $skip -eq 1
            set skip 0
            continue
        end
        if set -q sub[1]
            if test "$t" = --
                printf '%%s\n' $sub 1
                return
            end
            continue
        end
        switch $t
            case %s
                set skip 1
            case '-*'
            case '*'
                set sub $t
        end
    end
    set -q sub[1]; and printf '%%s\n' $sub 0
end

function __zkr_top
    test (count (__zkr_state)) -eq 0
end

# __zkr_using SUBCOMMAND: completing SUBCOMMAND's options or arguments.
function __zkr_using
    set -l state (__zkr_state)
    test (count $state) -eq 2; and test $state[2] = 0; and contains -- $state[1] $argv
end

function __zkr_command
    set -l state (__zkr_state)
    test (count $state) -eq 2; and test $state[2] = 1
end

# __zkr_complete_command completes COMMAND and its arguments as if typed
# alone.
function __zkr_complete_command
    set -l tokens (commandline -opc) (commandline -ct)
    set -l i (contains -i -- -- $tokens)
    set -l rest $tokens[(math $i + 1)..-1]
    if test (count $rest) -le 1
        complete -C "$rest"
    else
        complete -C (string join -- ' ' (string escape -- $rest[1..-2]) $rest[-1])
    end
end

complete -c zkr -f
%s
# After --: COMMAND and its arguments.
complete -c zkr -n __zkr_command -a '(__zkr_complete_command)'
`, strings.Join(top, " "), b.String())
}
