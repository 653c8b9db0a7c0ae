package apart

import (
	"errors"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// runners are Run and Deep, which behave alike for a caller.
var runners = []struct {
	name string
	run  func(func() int) int
}{{"Run", Run[int]}, {"Deep", Deep[int]}}

func TestRunReturnsOnAnotherGoroutine(t *testing.T) {
	var deep func(n int) int
	deep = func(n int) int {
		var pad [512]byte
		pad[n%512] = byte(n)
		if n == 0 {
			return int(pad[0])
		}
		return deep(n-1) + int(pad[n%512])
	}
	for _, r := range runners {
		if got := r.run(func() int { return deep(64) }); got != 64*65/2 {
			t.Fatalf("%s = %d, want %d", r.name, got, 64*65/2)
		}
	}
}

// recovered runs f and returns what it panicked with.
func recovered(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

func TestRunRaisesPanicsInTheCaller(t *testing.T) {
	for _, r := range runners {
		// Any value but an error: wrapped with the goroutine's stack.
		v := recovered(func() { r.run(func() int { panic("boom") }) })
		p, ok := v.(*Panic)
		if !ok || !strings.Contains(p.Error(), "boom") || !strings.Contains(p.Error(), "apart.TestRunRaisesPanicsInTheCaller") {
			t.Fatalf("%s: recovered %T %v, want a *Panic with the value and the goroutine's stack", r.name, v, v)
		}
		// An error as it is: net/http tells ErrAbortHandler by identity.
		if v := recovered(func() { r.run(func() int { panic(http.ErrAbortHandler) }) }); v != http.ErrAbortHandler {
			t.Fatalf("%s: recovered %v, want http.ErrAbortHandler itself", r.name, v)
		}
		sentinel := errors.New("sentinel")
		if v := recovered(func() { r.run(func() int { panic(sentinel) }) }); v != sentinel {
			t.Fatalf("%s: recovered %v, want the error value", r.name, v)
		}
	}
}

func TestRunEndsTheCallerOnGoexit(t *testing.T) {
	for _, r := range runners {
		var wg sync.WaitGroup
		after := false
		wg.Go(func() {
			r.run(func() int { runtime.Goexit(); return 1 })
			after = true
		})
		wg.Wait()
		if after {
			t.Fatalf("%s: the caller went on after f called runtime.Goexit", r.name)
		}
	}
	// Deep lost the goroutine that ended; it still serves.
	if got := Deep(func() int { return 7 }); got != 7 {
		t.Fatalf("Deep after a Goexit = %d", got)
	}
}

// TestDeepUnderLoad calls Deep from many goroutines at once, more than it
// keeps: every call gets its own result, some wait, and no more than
// maxDeep goroutines are ever started.
func TestDeepUnderLoad(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 * maxDeep {
		wg.Go(func() {
			for i := range 50 {
				want := g*1000 + i
				if got := Deep(func() int { time.Sleep(50 * time.Microsecond); return want }); got != want {
					t.Errorf("Deep = %d, want %d", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	deepMu.Lock()
	n := deepCount
	deepMu.Unlock()
	if n < 1 || n > maxDeep {
		t.Fatalf("%d goroutines kept, want 1 to %d", n, maxDeep)
	}
}
