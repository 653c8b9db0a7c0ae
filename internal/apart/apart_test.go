package apart

import (
	"errors"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
)

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
	if got := Run(func() int { return deep(64) }); got != 64*65/2 {
		t.Fatalf("Run = %d, want %d", got, 64*65/2)
	}
}

// recovered runs f and returns what it panicked with.
func recovered(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

func TestRunRaisesPanicsInTheCaller(t *testing.T) {
	// Any value but an error: wrapped with the goroutine's stack.
	v := recovered(func() { Run(func() int { panic("boom") }) })
	p, ok := v.(*Panic)
	if !ok || !strings.Contains(p.Error(), "boom") || !strings.Contains(p.Error(), "apart.TestRunRaisesPanicsInTheCaller") {
		t.Fatalf("recovered %T %v, want a *Panic with the value and the goroutine's stack", v, v)
	}
	// An error as it is: net/http tells ErrAbortHandler by identity.
	if v := recovered(func() { Run(func() int { panic(http.ErrAbortHandler) }) }); v != http.ErrAbortHandler {
		t.Fatalf("recovered %v, want http.ErrAbortHandler itself", v)
	}
	sentinel := errors.New("sentinel")
	if v := recovered(func() { Run(func() int { panic(sentinel) }) }); v != sentinel {
		t.Fatalf("recovered %v, want the error value", v)
	}
}

func TestRunEndsTheCallerOnGoexit(t *testing.T) {
	var wg sync.WaitGroup
	after := false
	wg.Go(func() {
		Run(func() int { runtime.Goexit(); return 1 })
		after = true
	})
	wg.Wait()
	if after {
		t.Fatal("the caller went on after f called runtime.Goexit")
	}
}
