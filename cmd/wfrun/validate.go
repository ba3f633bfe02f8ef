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
						fmt.Fprintf(out, "%s: invalid (%d errors)\n", path, len(le.Diagnostics))
					} else {
						fmt.Fprintf(out, "%s: %v\n", path, err)
					}
					continue
				}
				for _, d := range w.Warnings {
					fmt.Fprintln(out, d.String())
				}
				switch {
				case len(w.Warnings) > 0 && strict:
					bad++
					fmt.Fprintf(out, "%s: invalid with --strict (%d warnings)\n", path, len(w.Warnings))
				case len(w.Warnings) > 0:
					fmt.Fprintf(out, "%s: ok (%d warnings)\n", path, len(w.Warnings))
				default:
					fmt.Fprintf(out, "%s: ok\n", path)
				}
			}
			if bad > 0 {
				return failed("%d of %d workflows invalid", bad, len(args))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&strict, "strict", false, "treat warnings as errors")
	return cmd
}
