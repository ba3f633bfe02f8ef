package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/server"
)

func watchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "watch ID",
		Short: "Follow an instance step by step; exit 0 if it completes, 1 if it fails or is cancelled",
		Args:  cobra.ExactArgs(1),
	}
	c := clientFlags(cmd)
	cmd.ValidArgsFunction = c.completeServerInstances
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := c.check(); err != nil {
			return err
		}
		final, err := c.follow(cmd.Context(), args[0], cmd.OutOrStdout())
		if err != nil {
			return err
		}
		if c.output == "table" {
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s", final.ID, final.Status)
			if final.Outcome != "" {
				fmt.Fprintf(cmd.OutOrStdout(), " in %s", final.Outcome)
			}
			if e := errorOf(final); e != "" {
				fmt.Fprintf(cmd.OutOrStdout(), ": %s", e)
			}
			fmt.Fprintln(cmd.OutOrStdout())
		}
		return verdict(final)
	}
	return cmd
}

// event is one event of the server's stream.
type event = server.Event

// follow prints the instance's events to w as they happen and returns the
// instance once it has finished. The stream is opened before the instance
// is read, so that no step falls between the two; a stream that ends (the
// server restarting) is opened again after the last event seen.
func (c *client) follow(ctx context.Context, id string, w io.Writer) (instance, error) {
	var last uint64
	shown := map[string]bool{} // the waits printed
	for attempt := 0; ; attempt++ {
		req, err := c.request(ctx, "GET", "/v1/events?instance="+url.QueryEscape(id), nil)
		if err != nil {
			return instance{}, err
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Last-Event-ID", fmt.Sprint(last))
		resp, err := c.http.Do(req)
		if err == nil && resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			return instance{}, answerError(resp.StatusCode, body)
		}
		if err == nil {
			var i instance
			if err := c.call(ctx, "GET", instancePath(id), nil, &i); err != nil {
				resp.Body.Close()
				return instance{}, err
			}
			if i.Finished() {
				resp.Body.Close()
				return i, nil
			}
			if c.output == "table" {
				if err := printWaits(w, i, shown); err != nil {
					resp.Body.Close()
					return instance{}, err
				}
			}
			done, err := c.readEvents(ctx, resp.Body, id, w, &last, shown)
			resp.Body.Close()
			if err != nil {
				return instance{}, err
			}
			if done {
				if err := c.call(ctx, "GET", instancePath(id), nil, &i); err != nil {
					return instance{}, err
				}
				return i, nil
			}
		}
		if ctx.Err() != nil {
			return instance{}, ctx.Err()
		}
		if attempt >= 60 {
			return instance{}, &checkError{err: fmt.Errorf("lost the event stream of %s", id)}
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return instance{}, ctx.Err()
		}
	}
}

// readEvents prints the events of a stream until the instance finishes
// (done) or the stream ends.
func (c *client) readEvents(ctx context.Context, r io.Reader, id string, w io.Writer, last *uint64, shown map[string]bool) (done bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var data string
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = d
			continue
		}
		if line != "" || data == "" {
			continue
		}
		var ev event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return false, &checkError{err: fmt.Errorf("an event the server sent is not JSON: %w", err)}
		}
		data = ""
		*last = ev.ID
		if ev.Instance != id {
			continue
		}
		if ev.Type == "end" { // the stream's own: the instance is finished
			return true, nil
		}
		if err := c.printEvent(w, ev); err != nil {
			return false, err
		}
		if ev.Type == "completed" || ev.Type == "failed" || ev.Type == "cancelled" {
			return true, nil
		}
		if ev.Type == "state_changed" && c.output == "table" {
			if err := c.printEnteredWait(ctx, w, id, ev.To, shown); err != nil {
				return false, err
			}
		}
	}
	return false, nil
}

// printEnteredWait prints the wait of instance id when it is waiting in
// state, the state it has just entered.
func (c *client) printEnteredWait(ctx context.Context, w io.Writer, id, state string, shown map[string]bool) error {
	var i instance
	if err := c.call(ctx, "GET", instancePath(id), nil, &i); err != nil {
		return err
	}
	if i.Status != "waiting" || i.State != state {
		return nil
	}
	return printWaits(w, i, shown)
}

func (c *client) printEvent(w io.Writer, ev event) error {
	switch c.output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return enc.Encode(ev)
	case "yaml":
		fmt.Fprintln(w, "---")
		return printYAML(w, ev)
	}
	line := fmt.Sprintf("%s  step %-3d %-15s", ev.Time.Local().Format("15:04:05.000"), ev.Step, ev.Type)
	switch {
	case ev.From != "" || ev.To != "":
		line += fmt.Sprintf(" %s -> %s", dash(ev.From), dash(ev.To))
	case ev.Agent != "":
		line += " " + ev.Agent
	}
	if ev.Rule != "" {
		line += " (rule " + ev.Rule + ")"
	}
	if ev.Trigger != "" {
		line += " trigger " + ev.Trigger
	}
	if ev.Attempt > 1 {
		line += fmt.Sprintf(" attempt %d", ev.Attempt)
	}
	if ev.Kind != "" {
		line += " kind " + ev.Kind
	}
	if ev.DelaySeconds > 0 {
		line += fmt.Sprintf(" in %gs", ev.DelaySeconds)
	}
	if ev.Limit != "" {
		line += fmt.Sprintf(" %s %d of %d", ev.Limit, ev.Count, ev.Max)
	}
	if ev.Signal != "" {
		line += " signal " + ev.Signal
	}
	if ev.Outcome != "" {
		line += " outcome " + ev.Outcome
	}
	if u := ev.Usage; u != nil {
		line += fmt.Sprintf(" (%d+%d tokens", u.InputTokens, u.OutputTokens)
		if u.Cost != 0 {
			line += ", cost " + strconv.FormatFloat(u.Cost, 'f', -1, 64)
		}
		line += ")"
	}
	if p := ev.Progress; p != nil {
		if p.Message != "" {
			line += ": " + p.Message
		}
		if p.Delta != "" {
			line += " " + strconv.Quote(p.Delta)
		}
	}
	if ev.Error != "" {
		line += ": " + ev.Error
	}
	_, err := fmt.Fprintln(w, strings.TrimRight(line, " "))
	return err
}
