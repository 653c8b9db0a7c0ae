// Package procs tunes the Go scheduler for the gateway daemon: Adapt sizes
// GOMAXPROCS to the load (one P while the process needs less than a core,
// more as soon as it needs them), and ExecAwake restarts the program with
// the runtime's monitor thread kept out of deep sleep (monitor.go).
//
// Why: on a small host (a 2-vCPU VM or container, where the gateway shares
// the cores with the agents that call it) a Go server with GOMAXPROCS =
// the core count pays for every goroutine hand-off of a request — the
// server's background read, net/http's transport write and read loops —
// with a futex wake-up of an idle thread, which spins, finds nothing and
// sleeps again. Measured on the gateway (make bench-gateway, 2 vCPUs): at
// concurrency 1 those wake-ups were a quarter of its CPU per request and
// most of its added latency over a bare reverse proxy; with one P, a
// ready goroutine goes to the running thread's queue and nothing is woken.
// One P caps the process at a core of Go code, though, so Adapt watches
// the process's CPU time and doubles the Ps as soon as it uses most of
// what it has (up to the runtime's own default, which follows the cgroup
// CPU limit), and halves them again after a quiet spell.
//
// An explicit GOMAXPROCS in the environment is the operator's choice and
// is left alone.
package procs

import (
	"context"
	"os"
	"runtime"
	"time"
)

// Defaults.
const (
	// Interval is how often Adapt samples the process CPU time.
	Interval = 100 * time.Millisecond
	// busy: busyFor samples in a row using more than this share of the
	// current Ps grow them. A request stream served one at a time keeps
	// under it (the process waits on its clients and upstreams between
	// requests): more Ps would not serve it sooner.
	busy    = 0.9
	busyFor = 2
	// idle: samples using less than this share of half the Ps, for
	// quietFor in a row, halve them.
	idle     = 0.5
	quietFor = 30 // 3 s at Interval
)

// Options tune Adapt; the zero value is the production setting.
type Options struct {
	// Max is the most Ps Adapt sets; default the runtime's GOMAXPROCS at
	// the call (the core count, or the cgroup CPU limit).
	Max int
	// Interval between samples; default Interval.
	Interval time.Duration
	// OnChange, when set, is called after each change with the new count.
	OnChange func(n int)

	cpu func() time.Duration // process CPU time so far; tests replace it
}

// Adapt sets GOMAXPROCS to 1 and adjusts it to the load until ctx is
// done, then restores the runtime default. It returns at once,
// doing nothing, when GOMAXPROCS is set in the environment or the runtime
// has a single P anyway.
func Adapt(ctx context.Context, o Options) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	initial := runtime.GOMAXPROCS(0)
	if o.Max <= 0 {
		o.Max = initial
	}
	if o.Max <= 1 {
		return
	}
	if o.Interval <= 0 {
		o.Interval = Interval
	}
	if o.cpu == nil {
		o.cpu = processCPU
	}
	if o.cpu == nil { // no CPU clock on this platform: nothing to go by
		return
	}
	set := func(n int) {
		runtime.GOMAXPROCS(n)
		if o.OnChange != nil {
			o.OnChange(n)
		}
	}
	set(1)
	go func() {
		// The runtime default again, with its automatic updates (a
		// GOMAXPROCS call turns them off; the ceiling here is the default
		// at start, so a CPU limit changed while Adapt runs is not followed).
		defer runtime.SetDefaultGOMAXPROCS()
		t := time.NewTicker(o.Interval)
		defer t.Stop()
		var g governor
		g.n, g.max = 1, o.Max
		lastCPU, last := o.cpu(), time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				cpu := o.cpu()
				wall := now.Sub(last)
				if wall <= 0 {
					continue
				}
				util := float64(cpu-lastCPU) / float64(wall)
				lastCPU, last = cpu, now
				if n := g.next(util); n != g.n {
					g.n = n
					set(n)
				}
			}
		}
	}()
}

// governor is Adapt's decision: the current count, its ceiling and how
// many busy and quiet samples in a row it has seen.
type governor struct {
	n, max      int
	busy, quiet int
}

// next is the count after a sample that used util cores of CPU time.
func (g *governor) next(util float64) int {
	switch {
	case util > busy*float64(g.n) && g.n < g.max:
		g.quiet = 0
		g.busy++
		if g.busy >= busyFor {
			g.busy = 0
			return min(g.max, 2*g.n)
		}
		return g.n
	case g.n > 1 && util < idle*float64(g.n/2):
		g.busy = 0
		g.quiet++
		if g.quiet >= quietFor {
			g.quiet = 0
			return max(1, g.n/2)
		}
	default:
		g.busy, g.quiet = 0, 0
	}
	return g.n
}
