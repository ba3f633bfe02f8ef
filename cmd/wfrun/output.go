package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// Output formats of the commands that print data.
const (
	formatTable = "table"
	formatJSON  = "json"
	formatYAML  = "yaml"
)

// output is the -o flag, with --json kept as its alias.
type output struct {
	format string
	json   bool
}

// addOutput gives cmd `-o table|json|yaml` and `--json`. what says what the
// JSON form holds.
func addOutput(cmd *cobra.Command, o *output, what string) {
	cmd.Flags().StringVarP(&o.format, "output", "o", formatTable, "output format: table, json or yaml ("+what+")")
	cmd.Flags().BoolVar(&o.json, "json", false, "same as -o json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{formatTable, formatJSON, formatYAML}, cobra.ShellCompDirectiveNoFileComp))
}

// get returns the chosen format, or a usage error.
func (o *output) get(cmd *cobra.Command) (string, error) {
	switch o.format {
	case formatTable, formatJSON, formatYAML:
	default:
		return "", fmt.Errorf("unknown output format %q (want table, json or yaml)", o.format)
	}
	if o.json {
		if cmd.Flags().Changed("output") && o.format != formatJSON {
			return "", fmt.Errorf("--json and -o %s disagree", o.format)
		}
		return formatJSON, nil
	}
	return o.format, nil
}

// encoder writes values as JSON (one per line) or as YAML documents. JSON
// keeps '&', '<' and '>' as they are: conditions hold `&&` and `>`.
type encoder struct {
	w      io.Writer
	format string
	docs   int
}

func newEncoder(w io.Writer, format string) *encoder { return &encoder{w: w, format: format} }

func (e *encoder) encode(v any) error {
	data, err := marshalJSON(v)
	if err != nil {
		return err
	}
	if e.format == formatJSON {
		_, err = e.w.Write(data)
		return err
	}
	// YAML takes the JSON form, so that both use the same field names.
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return err
	}
	if e.docs > 0 {
		if _, err := io.WriteString(e.w, "---\n"); err != nil {
			return err
		}
	}
	e.docs++
	out, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	_, err = e.w.Write(out)
	return err
}

// marshalJSON is json.Marshal without HTML escaping, with a final newline.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// plural renders "1 step", "2 steps".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// isTerminal reports whether w is a terminal; tests replace it.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// palette colours words for a terminal, and leaves them alone otherwise or
// when NO_COLOR is set (https://no-color.org).
type palette struct{ on bool }

func paletteFor(w io.Writer) palette {
	if v, set := os.LookupEnv("NO_COLOR"); set && v != "" {
		return palette{}
	}
	return palette{on: isTerminal(w)}
}

func (p palette) paint(code, s string) string {
	if !p.on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p palette) red(s string) string    { return p.paint("31", s) }
func (p palette) green(s string) string  { return p.paint("32", s) }
func (p palette) yellow(s string) string { return p.paint("33", s) }
