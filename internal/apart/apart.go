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
// since 1 000 requests opening at once held 1 000 such stacks. Deep is Run
// on a few long-lived goroutines, for short calls made several times per
// stream, where starting a goroutine and growing its stack every time
// cost more than the call.
package apart

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
)

// Run calls f on a new goroutine and returns its result. A panic in f is
// raised again in the caller, where the caller's recovery (net/http's, for
// a handler) deals with it as before: an error value as it is (so
// http.ErrAbortHandler keeps its meaning), any other as a *Panic carrying
// f's stack. If f ends its goroutine (runtime.Goexit), so does the caller.
func Run[T any](f func() T) T {
	c := &call[T]{done: make(chan struct{})}
	go c.run(f)
	return c.wait()
}

// call is one call of f on another goroutine, as the caller sees it.
type call[T any] struct {
	res      T
	returned bool
	panicked any
	done     chan struct{}
}

// run calls f, on the goroutine that runs it.
func (c *call[T]) run(f func() T) {
	defer close(c.done)
	defer func() {
		if v := recover(); v != nil {
			c.panicked = carried(v)
		}
	}()
	c.res = f()
	c.returned = true
}

// wait returns f's result in the caller, or raises its panic there, or
// ends the caller's goroutine as f ended its own.
func (c *call[T]) wait() T {
	<-c.done
	switch {
	case c.panicked != nil:
		panic(c.panicked)
	case !c.returned:
		runtime.Goexit()
	}
	return c.res
}

// carried is what a recovered panic value v is raised again as in the
// caller: an error as it is, any other value as a *Panic with this stack.
func carried(v any) any {
	if _, isErr := v.(error); isErr {
		return v
	}
	return &Panic{Value: v, Stack: debug.Stack()}
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

// Unmarshal is json.Unmarshal run by Deep: a stream decoder's fallback to
// encoding/json (an event its hand-written path does not take) recurses
// 2–3 KiB deep, on a goroutine that streams for minutes.
func Unmarshal(data []byte, v any) error {
	return Deep(func() error { return json.Unmarshal(data, v) })
}

// Deep is Run on one of a few long-lived goroutines: for short calls that
// do not block and come often (several per stream), where a goroutine
// started per call, and its stack grown through the call's frames each
// time, cost more than the call (a Responses stream's item events: 2–3×
// its parsing time). The goroutines are started as calls find them all
// busy, up to maxDeep; beyond that a call waits for one.
func Deep[T any](f func() T) T {
	c := &call[T]{done: make(chan struct{})}
	job := func() { c.run(f) }
	select {
	case deepJobs <- job: // an idle one took it
	default:
		startDeep()
		deepJobs <- job
	}
	return c.wait()
}

// maxDeep is the most goroutines Deep keeps.
const maxDeep = 8

var (
	deepJobs  = make(chan func())
	deepMu    sync.Mutex
	deepCount int
)

// startDeep starts one more of Deep's goroutines unless there are
// maxDeep already.
func startDeep() {
	deepMu.Lock()
	defer deepMu.Unlock()
	if deepCount >= maxDeep {
		return
	}
	deepCount++
	go func() {
		// A job that ends its goroutine (runtime.Goexit) ends this one.
		defer func() {
			deepMu.Lock()
			deepCount--
			deepMu.Unlock()
		}()
		for job := range deepJobs {
			job()
		}
	}()
}
