// Package benchcpu reports a benchmark's process CPU time per operation.
// The shared benchmark machine is heavily loaded, so wall time (ns/op)
// mostly measures waiting for a core; cpu-ns/op (user + system time of
// the whole process, GC workers included, over b.N) does not.
package benchcpu

import (
	"syscall"
	"testing"
	"time"
)

// Start begins measuring; the returned function, called after the
// benchmark loop, reports the "cpu-ns/op" metric.
func Start(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Now is the process CPU time so far (user + system), for benchmarks
// that measure only part of each iteration.
func Now() time.Duration { return cpuTime() }
