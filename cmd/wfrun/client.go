package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/ops"
)

// client talks to a Baton server's API.
type client struct {
	base   string
	token  string
	output string
	http   *http.Client
}

// clientFlags adds --server, --token and -o to a client command.
func clientFlags(cmd *cobra.Command) *client {
	c := &client{http: &http.Client{}}
	server := os.Getenv("BATON_SERVER")
	if server == "" {
		server = "http://127.0.0.1:8080"
	}
	f := cmd.Flags()
	f.StringVar(&c.base, "server", server, "the server's URL (env BATON_SERVER)")
	f.StringVar(&c.token, "token", os.Getenv("BATON_TOKEN"), "an API token (env BATON_TOKEN)")
	f.StringVarP(&c.output, "output", "o", "table", "output format: table, json or yaml")
	return c
}

func (c *client) check() error {
	switch c.output {
	case "table", "json", "yaml":
		return nil
	}
	return fmt.Errorf("-o must be table, json or yaml, not %q", c.output)
}

// apiError is an error the server answered.
type apiError struct {
	Status  int
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field"`
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("server answered %d %s: %s", e.Status, e.Code, e.Message)
	if e.Field != "" {
		s += " (field " + e.Field + ")"
	}
	return s
}

// answerError is the error a server answered with status and body.
func answerError(status int, body []byte) error {
	var e struct {
		Error apiError `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Code == "" {
		e.Error = apiError{Code: "error", Message: strings.TrimSpace(string(body))}
	}
	e.Error.Status = status
	return &checkError{err: &e.Error}
}

func (c *client) request(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.base, "/")+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// call sends a request and decodes the JSON answer into out; an error
// answer is a *apiError (exit 1), as is a server that does not answer.
func (c *client) call(ctx context.Context, method, path string, body, out any) error {
	req, err := c.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &checkError{err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return &checkError{err: err}
	}
	if resp.StatusCode >= 300 {
		return answerError(resp.StatusCode, data)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(out)
}

// print writes v as JSON or YAML, or, for table, with table.
func (c *client) print(w io.Writer, v any, table func(*tabwriter.Writer)) error {
	switch c.output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		return printYAML(w, v)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

func printYAML(w io.Writer, v any) error {
	// Through JSON, so that the keys are the API's and numbers stay numbers.
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var generic any
	if err := yaml.Unmarshal(data, &generic); err != nil {
		return err
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(generic); err != nil {
		return err
	}
	return enc.Close()
}

// instance is an instance as the API answers it.
type instance = ops.Instance

// errorOf is a failed instance's error, "" for any other.
func errorOf(i instance) string {
	if i.Error == nil {
		return ""
	}
	return *i.Error
}

// verdict is the exit of a command that waited for an instance: nil when
// it completed, exit 1 when it failed or was cancelled.
func verdict(i instance) error {
	if i.Status == "completed" {
		return nil
	}
	if e := errorOf(i); e != "" {
		return failed("instance %s %s: %s", i.ID, i.Status, e)
	}
	if i.CancelReason != "" {
		return failed("instance %s %s: %s", i.ID, i.Status, i.CancelReason)
	}
	return failed("instance %s %s", i.ID, i.Status)
}

func instancePath(id string) string { return "/v1/instances/" + url.PathEscape(id) }

// readData reads a JSON argument given inline or, with @, from a file.
func readData(flag, arg string, stdin io.Reader) (any, error) {
	data := []byte(arg)
	if path, ok := strings.CutPrefix(arg, "@"); ok {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("--%s: %w", flag, err)
		}
	}
	if arg == "-" {
		var err error
		if data, err = io.ReadAll(io.LimitReader(stdin, maxStdinData)); err != nil {
			return nil, fmt.Errorf("--%s -: %w", flag, err)
		}
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("--%s is not JSON: %w", flag, err)
	}
	return v, nil
}

// maxStdinData bounds what --input - and --data - read: the server refuses
// bodies over 1 MiB anyway.
const maxStdinData = 1 << 20

func startCmd() *cobra.Command {
	var (
		input, id string
		version   int
		wait      bool
	)
	cmd := &cobra.Command{
		Use:   "start WORKFLOW [--input JSON|@file|-] [--id ID] [--wait]",
		Short: "Start an instance on a server",
		Args:  cobra.ExactArgs(1),
	}
	c := clientFlags(cmd)
	cmd.ValidArgsFunction = c.completeWorkflows
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := c.check(); err != nil {
			return err
		}
		body := map[string]any{}
		if input != "" {
			v, err := readData("input", input, cmd.InOrStdin())
			if err != nil {
				return err
			}
			body["input"] = v
		}
		if id != "" {
			body["id"] = id
		}
		if version > 0 {
			body["version"] = version
		}
		var got ops.Summary
		if err := c.call(cmd.Context(), "POST", "/v1/workflows/"+url.PathEscape(args[0])+"/instances", body, &got); err != nil {
			return err
		}
		if !wait {
			return c.print(cmd.OutOrStdout(), got, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "ID\tWORKFLOW\tVERSION\tSTATUS")
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", got.ID, got.Workflow, got.Version, got.Status)
			})
		}
		final, err := c.follow(cmd.Context(), got.ID, io.Discard)
		if err != nil {
			return err
		}
		if err := c.printInstance(cmd.OutOrStdout(), final); err != nil {
			return err
		}
		return verdict(final)
	}
	f := cmd.Flags()
	f.StringVar(&input, "input", "", "the start input: JSON, @file, or - for standard input")
	f.StringVar(&id, "id", "", "the instance id (a start retried with the same id starts nothing new)")
	f.IntVar(&version, "version", 0, "the workflow version (default the newest the server hosts)")
	f.BoolVar(&wait, "wait", false, "wait until the instance ends; exit 1 unless it completed")
	return cmd
}

func lsCmd() *cobra.Command {
	var workflow, status, state, cursor string
	var limit int
	cmd := &cobra.Command{
		Use:   "ls [--workflow NAME] [--status S] [--state STATE]",
		Short: "List a server's instances, newest first",
		Args:  cobra.NoArgs,
	}
	c := clientFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := c.check(); err != nil {
			return err
		}
		q := url.Values{}
		for k, v := range map[string]string{"workflow": workflow, "status": status, "state": state, "cursor": cursor} {
			if v != "" {
				q.Set(k, v)
			}
		}
		if limit > 0 {
			q.Set("limit", fmt.Sprint(limit))
		}
		var page struct {
			Instances []instance `json:"instances"`
			Next      *string    `json:"next"`
		}
		if err := c.call(cmd.Context(), "GET", "/v1/instances?"+q.Encode(), nil, &page); err != nil {
			return err
		}
		return c.print(cmd.OutOrStdout(), page, func(tw *tabwriter.Writer) {
			fmt.Fprintln(tw, "ID\tWORKFLOW\tVERSION\tSTATUS\tSTATE\tSTEP\tUPDATED")
			for _, i := range page.Instances {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\n", i.ID, i.Workflow, i.Version, i.Status, i.State, i.Step, i.Updated.Format(time.RFC3339))
			}
			if page.Next != nil {
				fmt.Fprintf(tw, "(more: --cursor %s)\n", *page.Next)
			}
		})
	}
	f := cmd.Flags()
	f.StringVar(&workflow, "workflow", "", "only this workflow's instances")
	f.StringVar(&status, "status", "", "only instances with this status (running, waiting, completed, failed, cancelled)")
	f.StringVar(&state, "state", "", "only instances in this state")
	f.IntVar(&limit, "limit", 0, "instances per page (default 50)")
	f.StringVar(&cursor, "cursor", "", "the page after this cursor (printed under a full page)")
	return cmd
}

func (c *client) printInstance(w io.Writer, i instance) error {
	return c.print(w, i, func(tw *tabwriter.Writer) {
		ctx, _ := json.Marshal(i.Context)
		rows := [][2]string{
			{"id", i.ID}, {"workflow", fmt.Sprintf("%s v%d", i.Workflow, i.Version)}, {"status", i.Status},
			{"state", i.State}, {"step", fmt.Sprint(i.Step)}, {"outcome", dash(i.Outcome)}, {"error", dash(errorOf(i))},
		}
		if i.CancelReason != "" {
			rows = append(rows, [2]string{"reason", i.CancelReason})
		}
		if note := onLimitNote(i); note != "" {
			rows = append(rows, [2]string{"limit", note})
		}
		for _, p := range i.Pending {
			rows = append(rows, [2]string{"pending", pendingLine(p)})
		}
		if i.Usage.Tokens != 0 || i.Usage.Cost != 0 {
			rows = append(rows, [2]string{"usage", fmt.Sprintf("%d tokens, cost %s", i.Usage.Tokens, strconv.FormatFloat(i.Usage.Cost, 'f', -1, 64))})
		}
		rows = append(rows, [][2]string{
			{"context", string(ctx)}, {"created", i.Created.Format(time.RFC3339)}, {"updated", i.Updated.Format(time.RFC3339)},
		}...)
		for _, kv := range rows {
			fmt.Fprintf(tw, "%s:\t%s\n", kv[0], kv[1])
		}
	})
}

func getCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "get ID", Short: "Show one instance of a server", Args: cobra.ExactArgs(1)}
	c := clientFlags(cmd)
	cmd.ValidArgsFunction = c.completeServerInstances
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := c.check(); err != nil {
			return err
		}
		var i instance
		if err := c.call(cmd.Context(), "GET", instancePath(args[0]), nil, &i); err != nil {
			return err
		}
		return c.printInstance(cmd.OutOrStdout(), i)
	}
	return cmd
}

func signalCmd() *cobra.Command {
	var data string
	cmd := &cobra.Command{Use: "signal ID NAME [--data JSON|@file|-]", Short: "Send a signal to an instance waiting for it", Args: cobra.ExactArgs(2)}
	c := clientFlags(cmd)
	cmd.ValidArgsFunction = c.completeServerInstances
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := c.check(); err != nil {
			return err
		}
		body := map[string]any{}
		if data != "" {
			v, err := readData("data", data, cmd.InOrStdin())
			if err != nil {
				return err
			}
			body["data"] = v
		}
		var got ops.Summary
		if err := c.call(cmd.Context(), "POST", instancePath(args[0])+"/signals/"+url.PathEscape(args[1]), body, &got); err != nil {
			return err
		}
		return c.print(cmd.OutOrStdout(), got, func(tw *tabwriter.Writer) {
			fmt.Fprintf(tw, "signal %s sent to %s\n", args[1], args[0])
		})
	}
	cmd.Flags().StringVar(&data, "data", "", "the signal's data: JSON, @file, or - for standard input")
	return cmd
}

func cancelCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{Use: "cancel ID [--reason WORDS]", Short: "Cancel an instance", Args: cobra.ExactArgs(1)}
	c := clientFlags(cmd)
	cmd.ValidArgsFunction = c.completeServerInstances
	cmd.Flags().StringVar(&reason, "reason", "", "why, in words: kept as the instance's cancel_reason")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := c.check(); err != nil {
			return err
		}
		var body any
		if reason != "" {
			body = map[string]string{"reason": reason}
		}
		var got ops.Summary
		if err := c.call(cmd.Context(), "POST", instancePath(args[0])+"/cancel", body, &got); err != nil {
			return err
		}
		return c.print(cmd.OutOrStdout(), got, func(tw *tabwriter.Writer) {
			fmt.Fprintln(tw, "ID\tWORKFLOW\tVERSION\tSTATUS")
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", got.ID, got.Workflow, got.Version, got.Status)
		})
	}
	return cmd
}
