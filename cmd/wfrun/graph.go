package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/fsm"
	"github.com/batonhq/baton/rules"
)

func graphCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:               "graph FILE",
		Short:             "Print the workflow's state diagram (Mermaid or Graphviz DOT)",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: yamlFiles,
		RunE: func(cmd *cobra.Command, args []string) error {
			var draw func(*rules.Workflow) string
			switch format {
			case "mermaid":
				draw = fsm.Mermaid
			case "dot":
				draw = fsm.DOT
			default:
				return fmt.Errorf("unknown --format %q (want mermaid or dot)", format)
			}
			w, err := rules.LoadBeside(args[0])
			if err != nil {
				return workflowError(cmd, err)
			}
			fmt.Fprint(cmd.OutOrStdout(), draw(w))
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "mermaid", "diagram format: mermaid or dot")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"mermaid", "dot"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
