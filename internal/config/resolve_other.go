//go:build !unix

package config

import "os/exec"

// setProcessGroup is a no-op where process groups are not available.
func setProcessGroup(*exec.Cmd) {}
