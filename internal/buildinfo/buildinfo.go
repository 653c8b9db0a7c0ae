// Package buildinfo holds the version stamped into binaries by the Makefile.
package buildinfo

import "runtime/debug"

// Version is set with -ldflags "-X github.com/ompgo/omp/internal/buildinfo.Version=…".
var Version = ""

// String returns the build version: the ldflags value, else the module
// version recorded by the Go toolchain, else "dev".
func String() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
