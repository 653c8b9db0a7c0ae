package procs

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestGovernorNext(t *testing.T) {
	g := governor{n: 1, max: 8}
	// One busy sample is not enough; an ordinary one in between resets.
	if n := g.next(0.95); n != 1 {
		t.Fatalf("one busy sample: n = %d", n)
	}
	if n := g.next(0.5); n != 1 || g.busy != 0 {
		t.Fatalf("after an ordinary sample: n = %d busy = %d", n, g.busy)
	}
	// Busy: doubles up to the ceiling, one step per busyFor samples.
	for _, want := range []int{2, 4, 8, 8} {
		for range busyFor - 1 {
			if n := g.next(0.95 * float64(g.n)); n != g.n {
				t.Fatalf("grew after fewer than %d busy samples", busyFor)
			}
		}
		g.n = g.next(0.95 * float64(g.n))
		if g.n != want {
			t.Fatalf("busy samples: n = %d, want %d", g.n, want)
		}
	}
	// Half the Ps would do, but not for long enough: no change; a sample
	// that needs them resets the count.
	for range quietFor - 1 {
		if n := g.next(1); n != 8 {
			t.Fatalf("quiet sample %d: n = %d, want 8", g.quiet, n)
		}
	}
	if n := g.next(3); n != 8 || g.quiet != 0 {
		t.Fatalf("a loaded sample: n = %d quiet = %d, want 8 and 0", n, g.quiet)
	}
	// A quiet spell halves them, again and again down to one.
	for _, want := range []int{4, 2, 1} {
		for i := range quietFor {
			n := g.next(0.01)
			if i < quietFor-1 && n != g.n {
				t.Fatalf("changed after %d quiet samples", i+1)
			}
			if i == quietFor-1 {
				g.n = n
			}
		}
		if g.n != want {
			t.Fatalf("after a quiet spell: n = %d, want %d", g.n, want)
		}
	}
	// One P is the floor: quiet forever stays at one.
	for range 3 * quietFor {
		if n := g.next(0); n != 1 {
			t.Fatalf("below one: %d", n)
		}
	}
	// At the ceiling a busy sample changes nothing.
	g = governor{n: 2, max: 2}
	for range 2 * busyFor {
		if n := g.next(5); n != 2 {
			t.Fatalf("past the ceiling: %d", n)
		}
	}
}

// clock is a fake process CPU clock that advances by rate cores of CPU
// per wall second while it runs.
type clock struct {
	mu    sync.Mutex
	cpu   time.Duration
	last  time.Time
	rate  float64
	reads atomic.Int32
}

func (c *clock) now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if !c.last.IsZero() {
		c.cpu += time.Duration(c.rate * float64(now.Sub(c.last)))
	}
	c.last = now
	c.reads.Add(1)
	return c.cpu
}

func (c *clock) set(rate float64) {
	c.now()
	c.mu.Lock()
	c.rate = rate
	c.mu.Unlock()
}

func TestAdaptFollowsTheLoad(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	// Adapt gives the runtime default back (go test -cpu sets its own).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.SetDefaultGOMAXPROCS()
	before := runtime.GOMAXPROCS(0)
	clk := &clock{}
	changes := make(chan int, 64)
	ctx, cancel := context.WithCancel(context.Background())
	Adapt(ctx, Options{Max: 4, Interval: 2 * time.Millisecond, cpu: clk.now, OnChange: func(n int) { changes <- n }})
	want := func(n int) {
		t.Helper()
		select {
		case got := <-changes:
			if got != n {
				t.Fatalf("GOMAXPROCS changed to %d, want %d", got, n)
			}
			if p := runtime.GOMAXPROCS(0); p != n {
				t.Fatalf("runtime GOMAXPROCS = %d after a change to %d", p, n)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no change to %d", n)
		}
	}
	want(1)
	clk.set(3.9) // saturating: 1 → 2 → 4
	want(2)
	want(4)
	clk.set(0) // idle: back down after quiet spells
	want(2)
	want(1)
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.GOMAXPROCS(0) != before {
		if time.Now().After(deadline) {
			t.Fatalf("GOMAXPROCS not restored to %d after cancel: %d", before, runtime.GOMAXPROCS(0))
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAdaptLeavesAnExplicitSetting(t *testing.T) {
	t.Setenv("GOMAXPROCS", "3")
	before := runtime.GOMAXPROCS(0)
	clk := &clock{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	Adapt(ctx, Options{Max: 4, Interval: time.Millisecond, cpu: clk.now, OnChange: func(int) { t.Error("changed GOMAXPROCS although it is set") }})
	time.Sleep(20 * time.Millisecond)
	if p := runtime.GOMAXPROCS(0); p != before || clk.reads.Load() != 0 {
		t.Fatalf("GOMAXPROCS %d (was %d), %d clock reads: Adapt ran", p, before, clk.reads.Load())
	}
}
