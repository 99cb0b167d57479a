package main

import (
	"fmt"
	"runtime/debug"
	"strings"
)

const versionHelp = `NAME
    zkr version - print zkr's version

SYNOPSIS
    zkr version
    zkr --version

DESCRIPTION
    Prints one line: the module version zkr was built as, the VCS revision
    and time it was built from when the build recorded them (a "+dirty"
    revision had uncommitted changes), and the Go toolchain. A binary from
    go install github.com/zkrecipes/zkrecipes/cmd/zkr@VERSION shows VERSION;
    one built from a checkout shows (devel) and the revision.

OPTIONS
    -h, --help
           show the manual.

EXIT STATUS
    0      printed.
    2      Usage error.

ENVIRONMENT
    None.

EXAMPLES
    zkr --version
`

// versionLine describes the binary from its build information, as
// runtime/debug records it: no version variable to forget to stamp.
func versionLine(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "zkr (unknown version: built without module information)"
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var rev, when string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	parts := []string{"zkr", version}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "+dirty"
		}
		parts = append(parts, "revision", rev)
		if when != "" {
			parts = append(parts, when)
		}
	}
	parts = append(parts, bi.GoVersion)
	return strings.Join(parts, " ")
}

// buildVersion is the version zkr was built as, as zkr version prints it:
// what /metrics reports as the service's version.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi == nil {
		return "unknown"
	}
	if bi.Main.Version == "" {
		return "(devel)"
	}
	return bi.Main.Version
}

func runVersion(a *app, _ *globals, args []string) int {
	fs := newFlagSet("version")
	code, ok := a.parseArgs("version", versionHelp, func() error {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if len(fs.Args()) > 0 {
			return fmt.Errorf("unexpected argument %q", fs.Args()[0])
		}
		return nil
	})
	if !ok {
		return code
	}
	fmt.Fprintln(a.stdout, versionLine(debug.ReadBuildInfo()))
	return 0
}
