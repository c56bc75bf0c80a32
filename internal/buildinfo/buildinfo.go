// Package buildinfo says which build of seckill runs: the version, commit
// and build time that the Makefile and the Dockerfile stamp with
// -ldflags -X, else what the Go toolchain recorded in the binary
// (debug.ReadBuildInfo), so `go build` and `go install` builds still say
// something true.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// Set by the linker: -X github.com/seckill/seckill/internal/buildinfo.version=…
var version, commit, buildTime string

// Info is one build's identity, as `seckill version`, /healthz and the
// seckill_build_info series show it.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildTime string `json:"build_time"`
	GoVersion string `json:"go_version"`
}

// Health is /healthz's answer: the process runs, and which build it is.
type Health struct {
	Status string `json:"status"`
	Info
}

// Healthy is the Health of a running process.
func Healthy() Health { return Health{Status: "ok", Info: Read()} }

// Read returns this binary's Info; what neither the linker nor the
// toolchain recorded is "unknown".
var Read = sync.OnceValue(read)

func read() Info {
	info := Info{Version: version, Commit: commit, BuildTime: buildTime, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if info.Version == "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && info.Commit == "":
				info.Commit = s.Value
			case s.Key == "vcs.time" && info.BuildTime == "":
				info.BuildTime = s.Value // the commit's time: the closest the toolchain records
			}
		}
	}
	for _, f := range []*string{&info.Version, &info.Commit, &info.BuildTime} {
		if *f == "" {
			*f = "unknown"
		}
	}
	return info
}
