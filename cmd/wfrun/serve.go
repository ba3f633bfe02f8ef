package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/batonhq/baton/server"
)

// serverCommands are the server and its client commands.
func serverCommands() []*cobra.Command {
	return []*cobra.Command{serveCmd(), startCmd(), lsCmd(), getCmd(), watchCmd(), signalCmd(), cancelCmd()}
}

func serveCmd() *cobra.Command {
	var cfg server.Config
	cmd := &cobra.Command{
		Use:   "serve --workflows DIR [--data DIR] [--nats URL [--name NAME] [--replicas N] | --nats-listen ADDR] [--http ADDR] [--token-file FILE] [--retain DURATION]",
		Short: "Host the workflows of a directory behind the HTTP API until SIGTERM or Ctrl-C",
		Long: `Host the workflows of a directory behind the HTTP API until SIGTERM or Ctrl-C.

The server watches the directory: a new or changed workflow file becomes its
workflow's current version for new instances within two seconds (SIGHUP reloads
at once); a file that does not load is logged and changes nothing. Instances
finish on the version they started on.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.WorkflowsDir == "" {
				return fmt.Errorf("serve needs --workflows DIR")
			}
			stderr := cmd.ErrOrStderr()
			enc := zap.NewProductionEncoderConfig()
			enc.EncodeTime = zapcore.ISO8601TimeEncoder
			cfg.Logger = zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(stderr), zap.InfoLevel))
			if cmd.Flags().Changed("nats-listen") && cfg.NATS != "" {
				return fmt.Errorf("--nats-listen applies to the embedded NATS server: leave it out with --nats")
			}
			if cfg.NATS != "" {
				cfg.NATSListen = ""
			}
			cfg.OnNATS = func(url string) {
				fmt.Fprintf(stderr, "wfrun: agents connect to NATS at %s\n", url)
			}
			cfg.OnListen = func(a net.Addr) {
				fmt.Fprintf(stderr, "wfrun: serving the HTTP API on http://%s (data in %s)\n", a, cfg.DataDir)
				fmt.Fprintf(stderr, "wfrun: the web view is on http://%s%s\n", a, server.ViewPath)
			}
			if err := cfg.Validate(); err != nil {
				return err // usage
			}
			// SIGHUP reloads the workflows at once, without waiting for
			// the server to notice the changed files.
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			cfg.ReloadOn = hup
			if cfg.WatchEvery == 0 {
				cfg.WatchEvery = -1 // the server's own default would look every second
			}
			if err := server.Run(cmd.Context(), cfg); err != nil {
				return &checkError{err: err}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.WorkflowsDir, "workflows", "", "the directory of workflow files to host")
	f.StringVar(&cfg.DataDir, "data", server.DefaultDataDir, "the directory of the store")
	f.StringVar(&cfg.NATS, "nats", "", "join this NATS server or cluster (nats://host:4222) instead of starting one; \""+server.NoNATS+"\": no NATS, a bbolt file and an in-memory bus")
	f.StringVar(&cfg.NATSListen, "nats-listen", server.DefaultNATSListen, "where the embedded NATS server lets agents connect (loopback only)")
	f.StringVar(&cfg.Name, "name", "", "with --nats: this server's name among the servers sharing the NATS system (default: random at each start)")
	f.DurationVar(&cfg.LeaseTTL, "lease-ttl", 0, "with --nats: how long this server's instances wait after its last heartbeat before another server takes them over (default 10s)")
	f.IntVar(&cfg.Replicas, "replicas", 1, "with --nats on a cluster: how many servers keep each stream (3 survives losing one)")
	f.StringVar(&cfg.HTTPAddr, "http", server.DefaultHTTPAddr, "the address of the HTTP API")
	f.DurationVar(&cfg.ReadTimeout, "read-timeout", server.DefaultReadTimeout, "how long a client has to send a whole request, body included")
	f.DurationVar(&cfg.WriteTimeout, "write-timeout", server.DefaultWriteTimeout, "how long a request's handling and answer may take (each write of an event stream)")
	f.DurationVar(&cfg.IdleTimeout, "idle-timeout", server.DefaultIdleTimeout, "how long a kept-alive connection waits for its next request")
	f.IntVar(&cfg.MaxStreams, "max-streams", server.DefaultMaxStreams, "the most event streams open at once (503 beyond)")
	f.StringVar(&cfg.TokenFile, "token-file", "", "a file of API tokens, one per line (required off loopback)")
	f.DurationVar(&cfg.WatchEvery, "watch-every", server.DefaultWatchEvery, "how often to look for changed workflow files; 0: never (SIGHUP only)")
	f.DurationVar(&cfg.Retain, "retain", 0, "prune finished instances last updated longer ago than this (720h), as the server starts and then periodically; 0 keeps them all")
	return cmd
}
