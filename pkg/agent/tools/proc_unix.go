//go:build unix

package tools

import (
	"os/exec"
	"syscall"
	"time"
)

// setProcessGroup starts cmd in its own process group, so a timeout or an
// abort reaches every process the command started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup sends SIGTERM to the process group, then SIGKILL after the
// grace period, and waits for the shell.
func killGroup(cmd *exec.Cmd, waited <-chan error) error {
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case err := <-waited:
		// The shell is gone; make sure nothing of its group survives.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return err
	case <-time.After(killGrace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return <-waited
	}
}
