package httpx

import (
	"bytes"
	"errors"
	"net/http"
	"time"
)

// DefaultSSEWriteTimeout bounds one SSE frame write when SSE.WriteTimeout is 0.
const DefaultSSEWriteTimeout = 10 * time.Second

// SetSSEHeaders sets the event-stream response headers of broker.md §2.9.
func SetSSEHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
}

// SSE writes server-sent events and flushes after each one. Every write gets
// its own deadline through http.ResponseController, so a stalled client is
// cut off without a server-wide WriteTimeout (which would end healthy long
// streams). An SSE is used by one goroutine.
type SSE struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
}

// NewSSE returns a writer over w; writeTimeout ≤ 0 means
// DefaultSSEWriteTimeout. Set the headers (SetSSEHeaders) before the first
// write.
func NewSSE(w http.ResponseWriter, writeTimeout time.Duration) *SSE {
	if writeTimeout <= 0 {
		writeTimeout = DefaultSSEWriteTimeout
	}
	return &SSE{w: w, rc: http.NewResponseController(w), timeout: writeTimeout}
}

// Event writes one "event: <name>\ndata: <data>\n\n" frame. Data containing
// newlines is split over several data: lines as the SSE format requires.
func (s *SSE) Event(name string, data []byte) error {
	b := s.buf[:0]
	if name != "" {
		b = append(append(append(b, "event: "...), name...), '\n')
	}
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		b = append(append(append(b, "data: "...), bytes.TrimSuffix(data[:i], []byte{'\r'})...), '\n')
		data = data[i+1:]
	}
	b = append(append(append(b, "data: "...), data...), "\n\n"...)
	s.buf = b[:0]
	if cap(s.buf) > 64<<10 {
		s.buf = nil // do not pin a large frame buffer on an idle stream
	}
	return s.Write(b)
}

// Comment writes the comment frame ": <text>\n\n" (e.g. a keepalive).
func (s *SSE) Comment(text string) error {
	return s.Write([]byte(": " + text + "\n\n"))
}

// Write writes pre-encoded frames and flushes them, within the per-write
// deadline.
func (s *SSE) Write(frames []byte) error {
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if _, err := s.w.Write(frames); err != nil {
		return err
	}
	if err := s.rc.Flush(); err != nil {
		return err
	}
	// Clear the deadline so an idle connection is not poisoned for the next
	// write (or the next request on a reused connection).
	if err := s.rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}
