package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// output is -o/--output: the line as text for people or JSON for
// programs. ZKR_OUTPUT gives the default; the command line wins.
type output struct {
	format string // "text" or "json"
	envErr error  // ZKR_OUTPUT is neither
}

// newOutput returns text, or what ZKR_OUTPUT says.
func newOutput() *output {
	o := &output{format: "text"}
	if v := os.Getenv("ZKR_OUTPUT"); v != "" {
		if err := o.Set(v); err != nil {
			o.envErr = fmt.Errorf("ZKR_OUTPUT=%q: want text or json", v)
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

// record is one flat result: named values in a fixed order. As text it is
// space-separated name=value fields; as JSON, an object with the same
// names in the same order, integers as numbers.
type record []field

type field struct {
	name  string
	value any // a string or an integer
}

func (r record) String() string {
	parts := make([]string, len(r))
	for i, f := range r {
		parts[i] = fmt.Sprintf("%s=%v", f.name, f.value)
	}
	return strings.Join(parts, " ")
}

func (r record) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range r {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// print writes r in the chosen format, one line.
func (o *output) print(w io.Writer, r record) error {
	if o.format == "json" {
		enc := json.NewEncoder(w) // Encode ends the line
		enc.SetEscapeHTML(false)
		return enc.Encode(r)
	}
	_, err := fmt.Fprintln(w, r.String())
	return err
}
