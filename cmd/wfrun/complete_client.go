package main

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// completeServerInstances completes the first argument of get, watch, signal and
// cancel with the ids of the server's newest instances, each with its
// workflow and status; a server that does not answer within
// completionTimeout completes nothing.
func (c *client) completeServerInstances(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(completionContext(cmd), completionTimeout)
	defer cancel()
	var page struct {
		Instances []instance `json:"instances"`
	}
	if err := c.call(ctx, "GET", "/v1/instances?limit=1000", nil, &page); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, i := range page.Instances {
		if strings.HasPrefix(i.ID, toComplete) {
			out = append(out, cobra.CompletionWithDesc(i.ID, i.Workflow+" "+i.Status))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeWorkflows completes start's workflow with the names the server
// hosts.
func (c *client) completeWorkflows(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(completionContext(cmd), completionTimeout)
	defer cancel()
	var got struct {
		Workflows []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"workflows"`
	}
	if err := c.call(ctx, "GET", "/v1/workflows", nil, &got); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, w := range got.Workflows {
		if strings.HasPrefix(w.Name, toComplete) {
			out = append(out, cobra.CompletionWithDesc(w.Name, w.Description))
		}
	}
	slices.Sort(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

func completionContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
