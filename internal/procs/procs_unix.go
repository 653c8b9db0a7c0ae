//go:build unix

package procs

import (
	"syscall"
	"time"
)

// processCPU is the user and system CPU time of the process so far.
var processCPU = func() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
