package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/rules"
)

func validateCmd() *cobra.Command {
	var strict bool
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Load and lint workflow files; print every error and warning with its position",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			pal := paletteFor(out)
			bad := 0
			for _, path := range args {
				w, err := rules.Load(path)
				if err != nil {
					bad++
					var le *rules.LoadError
					if errors.As(err, &le) {
						for _, d := range le.Diagnostics {
							fmt.Fprintln(out, d.String())
						}
						fmt.Fprintf(out, "%s: %s (%s)\n", path, pal.red("invalid"), plural(len(le.Diagnostics), "error", "errors"))
					} else {
						fmt.Fprintf(out, "%s: %s\n", path, pal.red(err.Error()))
					}
					continue
				}
				for _, d := range w.Warnings {
					fmt.Fprintln(out, d.String())
				}
				warnings := plural(len(w.Warnings), "warning", "warnings")
				switch {
				case len(w.Warnings) > 0 && strict:
					bad++
					fmt.Fprintf(out, "%s: %s with --strict (%s)\n", path, pal.red("invalid"), warnings)
				case len(w.Warnings) > 0:
					fmt.Fprintf(out, "%s: %s (%s)\n", path, pal.yellow("ok"), warnings)
				default:
					fmt.Fprintf(out, "%s: %s\n", path, pal.green("ok"))
				}
			}
			if bad > 0 {
				return failed("%d of %s invalid", bad, plural(len(args), "workflow", "workflows"))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&strict, "strict", false, "treat warnings as errors")
	return cmd
}
