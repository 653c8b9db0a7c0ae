package sse

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// DefaultWriteTimeout bounds one frame write of an HTTP Writer created with
// a write timeout ≤ 0.
const DefaultWriteTimeout = 10 * time.Second

// maxKeptBuf is the largest frame buffer a Writer keeps between frames, so
// an idle stream does not pin the memory of one large frame.
const maxKeptBuf = 64 << 10

// SetHeaders sets the event-stream response headers: the content type
// with charset, no caching, keep-alive and no proxy buffering. Call it
// before the first write.
func SetHeaders(h http.Header) {
	h["Content-Type"] = streamHeaders.contentType
	h["Cache-Control"] = streamHeaders.cacheControl
	h["Connection"] = streamHeaders.connection
	h["X-Accel-Buffering"] = streamHeaders.accelBuffering
}

// streamHeaders are SetHeaders' values, shared by every stream: set
// straight into the map (canonical keys) without Header.Set's value slice
// per header per response. Nothing modifies a header value in place, and
// each slice is full (len = cap), so an Add copies instead of writing
// into it.
var streamHeaders = struct{ contentType, cacheControl, connection, accelBuffering []string }{
	[]string{"text/event-stream; charset=utf-8"}, []string{"no-cache"}, []string{"keep-alive"}, []string{"no"},
}

// AppendEvent appends one frame to dst: an "event:" line when name is not
// empty, one "data:" line per line of data, and the blank line that ends the
// event. Line breaks (\n, \r\n or \r) in data start another data line, so a
// reader gets data back with \n separators; CR and LF are dropped from name.
// Compact JSON has no raw line breaks and takes the one-line fast path.
func AppendEvent(dst []byte, name string, data []byte) []byte {
	if name != "" {
		dst = append(dst, "event: "...)
		dst = appendNoEOL(dst, name)
		dst = append(dst, '\n')
	}
	for {
		dst = append(dst, "data: "...)
		i := indexEOL(data)
		if i < 0 {
			dst = append(dst, data...)
			break
		}
		dst = append(dst, data[:i]...)
		dst = append(dst, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return append(dst, '\n', '\n')
}

// AppendComment appends a comment frame (": text\n\n"), the keepalive of
// the broker stream and the C, R and P formats. Each line of a multi-line
// text becomes its own comment line.
func AppendComment(dst []byte, text string) []byte {
	for {
		dst = append(dst, ':', ' ')
		i := indexEOL([]byte(text)) // does not allocate: the conversion does not escape
		if i < 0 {
			dst = append(dst, text...)
			break
		}
		dst = append(dst, text[:i]...)
		dst = append(dst, '\n')
		if text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n' {
			i++
		}
		text = text[i+1:]
	}
	return append(dst, '\n', '\n')
}

func appendNoEOL(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '\r' && c != '\n' {
			dst = append(dst, c)
		}
	}
	return dst
}

// Writer writes frames and flushes after each one. Its buffer is reused, so
// a frame costs no allocation once the buffer has grown. A Writer is used
// by one goroutine.
type Writer struct {
	w       io.Writer
	flush   func() error
	rc      *http.ResponseController // HTTP writers: per-write deadlines
	timeout time.Duration
	buf     []byte
}

// NewWriter returns a Writer on w. flush (may be nil) is called after every
// frame.
func NewWriter(w io.Writer, flush func() error) *Writer {
	return &Writer{w: w, flush: flush}
}

// NewHTTPWriter returns a Writer on an HTTP response that flushes after
// every frame and gives every write its own deadline through
// http.ResponseController: a stalled client is cut off after writeTimeout
// (≤ 0 means DefaultWriteTimeout) without a server-wide WriteTimeout, which
// would end healthy long streams. Set the headers (SetHeaders) first.
func NewHTTPWriter(w http.ResponseWriter, writeTimeout time.Duration) *Writer {
	if writeTimeout <= 0 {
		writeTimeout = DefaultWriteTimeout
	}
	rc := http.NewResponseController(w)
	return &Writer{w: w, flush: rc.Flush, rc: rc, timeout: writeTimeout}
}

// Event writes one event frame (AppendEvent) and flushes.
func (w *Writer) Event(name string, data []byte) error {
	return w.send(AppendEvent(w.buf[:0], name, data))
}

// Comment writes a comment frame (AppendComment) and flushes.
func (w *Writer) Comment(text string) error {
	return w.send(AppendComment(w.buf[:0], text))
}

func (w *Writer) send(b []byte) error {
	w.buf = b[:0]
	if cap(w.buf) > maxKeptBuf {
		w.buf = nil
	}
	return w.WriteFrames(b)
}

// WriteFrames writes pre-encoded frames (for example several AppendEvent
// results) and flushes them, within the per-write deadline of an HTTP
// Writer. The deadline is cleared afterwards so an idle connection is not
// poisoned for the next write (or the next request on a reused connection).
func (w *Writer) WriteFrames(frames []byte) error {
	if w.rc != nil {
		if err := w.rc.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
	}
	if _, err := w.w.Write(frames); err != nil {
		return err
	}
	if w.flush != nil {
		if err := w.flush(); err != nil {
			return err
		}
	}
	if w.rc != nil {
		if err := w.rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
	}
	return nil
}
