package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
)

// outputEnv is the variable behind -o/--output.
const outputEnv = "ZKR_OUTPUT"

// outputHelp is the manual's entry for -o/--output.
const outputHelp = `    -o FORMAT, --output FORMAT   [ZKR_OUTPUT]
           text (default) or json: JSON Lines, one object per line, with
           the same names as the text and numbers as JSON numbers.
`

// output is -o/--output, the choice between text for people and JSON for
// programs, of each subcommand that prints results. Each subcommand
// registers it on its own flag set; ZKR_OUTPUT gives the default, and the
// command line wins, as for the global options.
type output struct {
	format string // "text" or "json"
	envErr error  // ZKR_OUTPUT is neither
}

// newOutput returns text, or what ZKR_OUTPUT says.
func newOutput() *output {
	o := &output{format: "text"}
	if v := os.Getenv(outputEnv); v != "" {
		if err := o.Set(v); err != nil {
			o.envErr = fmt.Errorf("%s=%q: want text or json", outputEnv, v)
		}
	}
	return o
}

func (o *output) register(fs *flag.FlagSet) {
	fs.Var(o, "output", "")
	fs.Var(o, "o", "")
}

func (o *output) String() string { return o.format }

func (o *output) Set(v string) error {
	switch v {
	case "text", "json":
		o.format = v
		return nil
	}
	return fmt.Errorf("want text or json, not %q", v)
}

// check reports a ZKR_OUTPUT that does not parse, as a usage error.
func (o *output) check() error { return o.envErr }

func (o *output) json() bool { return o.format == "json" }

// writeJSON writes v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode ends the line
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}
