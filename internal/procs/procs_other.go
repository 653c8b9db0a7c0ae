//go:build !unix

package procs

import "time"

// processCPU is nil where the process CPU time is not read: Adapt does
// nothing there.
var processCPU func() time.Duration
