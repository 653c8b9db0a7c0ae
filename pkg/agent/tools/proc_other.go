//go:build !unix

package tools

import "os/exec"

// setProcessGroup is a no-op where process groups do not exist.
func setProcessGroup(*exec.Cmd) {}

// killGroup kills the shell (no process groups here) and waits for it.
func killGroup(cmd *exec.Cmd, waited <-chan error) error {
	_ = cmd.Process.Kill()
	return <-waited
}
