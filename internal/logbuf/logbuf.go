// Package logbuf takes a server's log writes off its request path.
//
// The gateway logs a line per request. Written straight to stderr, each
// line is a write system call on the goroutine that serves the request,
// before the upstream call. A Writer collects lines and writes them
// out together from a timer, at most Delay after the first one is
// buffered; a line at Warn or above (through Handler) goes out at once
// with everything before it, so a failure is on the terminal, in order,
// as it happens. Lines still buffered when the process dies abruptly
// (kill -9, a runtime fatal error) are lost; Close writes them on every
// orderly exit.
package logbuf

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Defaults.
const (
	// Delay is the longest a line waits in the buffer.
	Delay = 50 * time.Millisecond
	// maxBuffered makes a write flush at once when that much is waiting.
	maxBuffered = 32 << 10
)

// Writer is a buffered io.Writer flushed by a timer. Safe for concurrent
// use; each Write is kept whole.
type Writer struct {
	w     io.Writer
	delay time.Duration

	mu     sync.Mutex
	buf    []byte
	timer  *time.Timer
	armed  bool
	closed bool
}

// New returns a Writer over w with Delay.
func New(w io.Writer) *Writer { return &Writer{w: w, delay: Delay} }

// Write buffers p; it never fails (a failure to write the buffer out is
// the underlying writer's, as a log line's is to slog).
func (b *Writer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return b.w.Write(p)
	}
	b.buf = append(b.buf, p...)
	switch {
	case len(b.buf) >= maxBuffered:
		b.flushLocked()
	case !b.armed:
		b.armed = true
		if b.timer == nil {
			b.timer = time.AfterFunc(b.delay, b.Flush)
		} else {
			b.timer.Reset(b.delay)
		}
	}
	return len(p), nil
}

// Flush writes out what is buffered.
func (b *Writer) Flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
}

func (b *Writer) flushLocked() {
	if b.armed {
		b.timer.Stop()
		b.armed = false
	}
	if len(b.buf) == 0 {
		return
	}
	_, _ = b.w.Write(b.buf)
	if cap(b.buf) > 4*maxBuffered {
		b.buf = nil // a burst's buffer is not kept for good
	} else {
		b.buf = b.buf[:0]
	}
}

// Close flushes and makes later writes go straight through.
func (b *Writer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
	b.closed = true
	return nil
}

// Handler wraps h, which writes to w, so that a record at Warn or above
// flushes w at once.
func Handler(h slog.Handler, w *Writer) slog.Handler { return flushHandler{h, w} }

type flushHandler struct {
	slog.Handler
	w *Writer
}

func (h flushHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		h.w.Flush()
	}
	return err
}

func (h flushHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushHandler{h.Handler.WithAttrs(attrs), h.w}
}

func (h flushHandler) WithGroup(name string) slog.Handler {
	return flushHandler{h.Handler.WithGroup(name), h.w}
}
