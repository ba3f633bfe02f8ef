package main

import (
	"runtime"
	"runtime/debug"
	"strings"
)

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
	if v == "" {
		v = "(devel)"
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
