package apart

import (
	"errors"
	"strings"
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
		return deep(n-1) + int(pad[n%512]&0)
	}
	if got := Run(func() int { return deep(64) + 7 }); got != 7 {
		t.Fatalf("Run = %d, want 7", got)
	}
}

func TestRunRaisesPanicsInTheCaller(t *testing.T) {
	sentinel := errors.New("boom")
	defer func() {
		v := recover()
		p, ok := v.(*Panic)
		if !ok {
			t.Fatalf("recovered %T %v, want *Panic", v, v)
		}
		if !errors.Is(p, sentinel) || !strings.Contains(p.Error(), "boom") || !strings.Contains(p.Error(), "apart.TestRunRaisesPanicsInTheCaller") {
			t.Fatalf("panic %q does not carry the value and the goroutine's stack", p.Error())
		}
	}()
	Run(func() struct{} { panic(sentinel) })
	t.Fatal("Run returned after a panic")
}
