// Package apart runs a deep call on a goroutine of its own while the
// caller waits.
//
// A goroutine keeps the stack it grew for as long as it lives, and a
// gateway handler's goroutine lives for the whole stream it serves: one
// deep call on the request path (an OAuth pick, which may fetch usage
// over HTTP) doubled the stack of every open stream (issue 9). Run puts
// such a call on a short-lived goroutine, whose stack goes back to the
// runtime when it returns. The caller is parked meanwhile, so the two
// never run at once; with one P the hand-over is two goroutine switches
// on the same thread. The helper's stack is memory too while it runs: a
// call every request makes (the upstream open) is cheaper kept shallow,
// since 1 000 requests opening at once held 1 000 such stacks.
package apart

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
)

// Run calls f on a new goroutine and returns its result. A panic in f is
// raised again in the caller, where the caller's recovery (net/http's, for
// a handler) deals with it as before: an error value as it is (so
// http.ErrAbortHandler keeps its meaning), any other as a *Panic carrying
// f's stack. If f ends its goroutine (runtime.Goexit), so does the caller.
func Run[T any](f func() T) T {
	var (
		res      T
		returned bool
		panicked any
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if v := recover(); v != nil {
				if _, isErr := v.(error); isErr {
					panicked = v
				} else {
					panicked = &Panic{Value: v, Stack: debug.Stack()}
				}
			}
		}()
		res = f()
		returned = true
	}()
	<-done
	switch {
	case panicked != nil:
		panic(panicked)
	case !returned:
		runtime.Goexit()
	}
	return res
}

// Panic is a panic raised on Run's goroutine with a value that is not an
// error.
type Panic struct {
	Value any
	Stack []byte // of the goroutine that panicked
}

func (p *Panic) Error() string {
	return fmt.Sprintf("%v\n\n[on apart.Run's goroutine]\n%s", p.Value, p.Stack)
}

// Unmarshal is json.Unmarshal run by Run: a stream decoder's fallback to
// encoding/json (an event its hand-written path does not take) recurses
// 2–3 KiB deep, on a goroutine that streams for minutes.
func Unmarshal(data []byte, v any) error {
	return Run(func() error { return json.Unmarshal(data, v) })
}
