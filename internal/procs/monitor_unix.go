//go:build unix

package procs

import (
	"os"
	"syscall"
)

// ExecAwake replaces the process with the same program, arguments and
// environment plus MonitorSetting (which the runtime reads only at start),
// so the rest of main runs with the monitor kept awake. It returns nil
// without doing anything when GODEBUG already sets schedtrace (so the
// program it started returns here), and the error when the program could
// not be re-executed; the caller then goes on as it is.
//
// Call it first thing in a server's main, before anything that a second
// start would repeat (files, listeners, output).
func ExecAwake() error {
	env, ok := MonitorEnv(os.Environ())
	if !ok {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return syscall.Exec(exe, os.Args, env)
}
