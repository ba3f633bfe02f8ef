package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/schema"
)

func schemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema [workflow|scenario]",
		Short: "Print the JSON Schema (2020-12) of workflow files (default) or scenario files, for editors",
		Long: `Print the JSON Schema (2020-12) of workflow files (default) or scenario files.

Editors that use the YAML language server check a file and complete its keys
when the file names its schema in a comment:

  wfrun schema workflow > workflow.schema.json
  # yaml-language-server: $schema=./workflow.schema.json`,
		Args:      cobra.MatchAll(cobra.MaximumNArgs(1), cobra.OnlyValidArgs),
		ValidArgs: []string{"workflow", "scenario"},
		RunE: func(cmd *cobra.Command, args []string) error {
			src := schema.Workflow()
			if len(args) == 1 && args[0] == "scenario" {
				src = schema.Scenario()
			}
			_, err := cmd.OutOrStdout().Write(src)
			if err != nil {
				return fmt.Errorf("schema: %w", err)
			}
			return nil
		},
	}
}
