package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/rules"
)

// validation is what `wfrun validate` found in one file; its JSON form is
// the -o json output.
type validation struct {
	File     string       `json:"file"`
	Valid    bool         `json:"valid"`
	Error    string       `json:"error,omitempty"` // the file could not be read
	Errors   []diagnostic `json:"errors"`
	Warnings []diagnostic `json:"warnings"`
}

type diagnostic struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Message string `json:"message"`
}

func diagnostics(ds []rules.Diagnostic) []diagnostic {
	out := []diagnostic{}
	for _, d := range ds {
		out = append(out, diagnostic{File: d.File, Line: d.Line, Col: d.Col, Message: d.Message})
	}
	return out
}

func validate(path string, strict bool) (v validation, printed []rules.Diagnostic) {
	v = validation{File: path, Errors: []diagnostic{}, Warnings: []diagnostic{}}
	w, err := rules.LoadBeside(path)
	if err != nil {
		var le *rules.LoadError
		if errors.As(err, &le) {
			v.Errors = diagnostics(le.Diagnostics)
			return v, le.Diagnostics
		}
		v.Error = err.Error()
		return v, nil
	}
	v.Warnings = diagnostics(w.Warnings)
	v.Valid = !strict || len(w.Warnings) == 0
	return v, w.Warnings
}

func validateCmd() *cobra.Command {
	var (
		strict bool
		out    output
	)
	cmd := &cobra.Command{
		Use:               "validate FILE...",
		Short:             "Load and lint workflow files; print every error and warning with its position",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: yamlFiles,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := out.get(cmd)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			var results []validation
			bad := 0
			for _, path := range args {
				v, printed := validate(path, strict)
				if !v.Valid {
					bad++
				}
				results = append(results, v)
				if format == formatTable {
					writeValidation(w, v, printed, strict, paletteFor(w))
				}
			}
			if format != formatTable {
				if err := newEncoder(w, format).encode(results); err != nil {
					return err
				}
			}
			if bad > 0 {
				return failed("%d of %s invalid", bad, plural(len(args), "workflow", "workflows"))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&strict, "strict", false, "treat warnings as errors")
	addOutput(cmd, &out, "one result per file with its errors and warnings")
	return cmd
}

// writeValidation prints a file's diagnostics, then a line saying whether
// it is valid.
func writeValidation(w io.Writer, v validation, printed []rules.Diagnostic, strict bool, pal palette) {
	for _, d := range printed {
		fmt.Fprintln(w, d.String())
	}
	warnings := plural(len(v.Warnings), "warning", "warnings")
	switch {
	case v.Error != "":
		fmt.Fprintf(w, "%s: %s\n", v.File, pal.red(v.Error))
	case len(v.Errors) > 0:
		fmt.Fprintf(w, "%s: %s (%s)\n", v.File, pal.red("invalid"), plural(len(v.Errors), "error", "errors"))
	case !v.Valid:
		fmt.Fprintf(w, "%s: %s with --strict (%s)\n", v.File, pal.red("invalid"), warnings)
	case len(v.Warnings) > 0:
		fmt.Fprintf(w, "%s: %s (%s)\n", v.File, pal.yellow("ok"), warnings)
	default:
		fmt.Fprintf(w, "%s: %s\n", v.File, pal.green("ok"))
	}
}
