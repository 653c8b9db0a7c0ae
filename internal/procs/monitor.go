package procs

import (
	"os"
	"slices"
	"strings"
)

// The runtime's system monitor (sysmon) is a thread of its own that,
// while any P is busy, wakes every 20 µs at first and backs off to 10 ms
// once it has found nothing to do for a while. Whenever it sees every P
// idle it sleeps deeply, and the next system call wakes it and sets it
// back to 20 µs. A server waiting on its clients and upstreams has every P
// idle many times per request, so the monitor never backs off: profiling
// the gateway on a 2-vCPU VM (make bench-gateway, 300 KB requests) found
// it at a fifth of the process's CPU time, most of it in the context
// switches of its 20 µs sleeps, on the same cores as the requests.
//
// The runtime keeps the monitor out of deep sleep when GODEBUG sets
// schedtrace (it must stay up to print the trace); with the longest
// period the trace is never due, and the monitor backs off to 10 ms
// and stays there while the process works. Measured the same way, in one
// run against the same binary without it: about 60 to 130 µs less added
// latency for a small request and 70 to 200 µs for a 300 KB one. An idle
// process wakes 100 times a second instead of rarely, for no measurable
// CPU time.
//
// What it costs:
//   - the runtime prints the trace line once at start on a host whose
//     monotonic clock is past the period, that is, up more than 24.8 days
//     ("SCHED 0ms: gomaxprocs=…" on standard error), and every 24.8 days
//     after that;
//   - a crash (an unrecovered panic, a fatal error, SIGQUIT) prints the
//     detailed scheduler trace first: a line per P, per thread and per
//     goroutine, ahead of the panic message;
//   - a P blocked in a system call (a write to a stderr pipe nobody
//     drains, an fsync) is handed to another thread only after one or two
//     of the monitor's 10 ms periods, where a monitor woken by that call
//     took it within tens of µs: on one P (internal/procs' governor when
//     the gateway is not busy) everything waits that long. In the gateway
//     such calls are a log write (internal/logbuf) to a stderr pipe that is
//     full, and a slow write of the broker snapshot cache file;
//   - programs the process starts (a config value's shell command)
//     inherit the setting.

// MonitorSetting is the GODEBUG setting that keeps the monitor awake.
const MonitorSetting = "schedtrace=2147483647" // ms: the largest int32

// MonitorEnv returns environ with MonitorSetting added to GODEBUG, and
// true; or environ unchanged and false when GODEBUG already sets
// schedtrace (an operator's choice: schedtrace=0 turns this off).
func MonitorEnv(environ []string) ([]string, bool) {
	const key = "GODEBUG="
	at, godebug := -1, ""
	for i, kv := range environ {
		if strings.HasPrefix(kv, key) {
			at, godebug = i, kv[len(key):] // the first one counts, as for the runtime
			break
		}
	}
	v, ok := monitorGODEBUG(godebug)
	if !ok {
		return environ, false
	}
	out := slices.Clone(environ)
	if at < 0 {
		return append(out, key+v), true
	}
	out[at] = key + v
	return out, true
}

// SetMonitorEnv puts MonitorSetting into this process's GODEBUG, for a
// program it is about to execute (which reads it at start), unless GODEBUG
// already sets schedtrace. This process keeps its own monitor as it is.
func SetMonitorEnv() {
	if v, ok := monitorGODEBUG(os.Getenv("GODEBUG")); ok {
		_ = os.Setenv("GODEBUG", v)
	}
}

// monitorGODEBUG is godebug with MonitorSetting added, or false when it
// already sets schedtrace.
func monitorGODEBUG(godebug string) (string, bool) {
	for _, s := range strings.Split(godebug, ",") {
		if strings.HasPrefix(s, "schedtrace=") { // as the runtime reads it: no spaces
			return godebug, false
		}
	}
	if godebug == "" {
		return MonitorSetting, true
	}
	return godebug + "," + MonitorSetting, true
}
