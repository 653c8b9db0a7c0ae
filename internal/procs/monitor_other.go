//go:build !unix

package procs

// ExecAwake does nothing where a process cannot replace itself.
func ExecAwake() error { return nil }
