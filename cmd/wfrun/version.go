package main

import (
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Set at link time by a build that has no VCS stamp of its own (a build
// from a source archive, or with -buildvcs=false):
//
//	go build -ldflags "-X main.buildVersion=v0.4.0 -X main.buildCommit=$(git rev-parse HEAD)" ./cmd/wfrun
//
// The build information wins where it has the same fact.
var (
	buildVersion string
	buildCommit  string
)

// versionCmd is `wfrun version`, the same as `wfrun --version`.
func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this binary (the same as --version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write([]byte("wfrun " + version() + "\n"))
			return err
		},
	}
}

// version describes this binary from its build info: the module version
// ("(devel)" when built from a checkout), the commit and its time, and the
// Go version.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build info) " + runtime.Version()
	}
	return versionOf(info)
}

func versionOf(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "(devel)"
		if buildVersion != "" {
			v = buildVersion
		}
	}
	var rev, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var extra []string
	if rev == "" {
		rev = buildCommit
	}
	if rev != "" {
		extra = append(extra, "commit "+rev[:min(12, len(rev))])
	}
	if at != "" {
		extra = append(extra, at)
	}
	if modified {
		extra = append(extra, "modified")
	}
	if len(extra) > 0 {
		v += " (" + strings.Join(extra, ", ") + ")"
	}
	return v + " " + info.GoVersion
}
