package sse

import (
	"bytes"
	"io"
)

// AppendEvent appends one SSE frame to dst: an "event:" line when name is
// not empty, one "data:" line per line of data, and the blank line that
// ends the event (wire-formats.md §2.2). data should be compact JSON, which
// has no newlines; a newline in data starts another data line so the
// frame stays well formed.
func AppendEvent(dst []byte, name string, data []byte) []byte {
	if name != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, name...)
		dst = append(dst, '\n')
	}
	for {
		i := bytes.IndexByte(data, '\n')
		dst = append(dst, "data: "...)
		if i < 0 {
			dst = append(dst, bytes.TrimSuffix(data, []byte("\r"))...)
			break
		}
		dst = append(dst, bytes.TrimSuffix(data[:i], []byte("\r"))...)
		dst = append(dst, '\n')
		data = data[i+1:]
	}
	return append(dst, '\n', '\n')
}

// AppendComment appends a comment frame (": text\n\n"), the keepalive of
// the C, R and P formats.
func AppendComment(dst []byte, text string) []byte {
	dst = append(dst, ':', ' ')
	dst = append(dst, text...)
	return append(dst, '\n', '\n')
}

// Writer writes SSE frames to w and flushes after each one. Its buffer is
// reused, so a frame costs no allocation once the buffer has grown.
type Writer struct {
	w     io.Writer
	flush func() error
	buf   []byte
}

// NewWriter returns a Writer on w. flush (may be nil) is called after every
// frame, e.g. http.NewResponseController(rw).Flush.
func NewWriter(w io.Writer, flush func() error) *Writer {
	return &Writer{w: w, flush: flush, buf: make([]byte, 0, 4096)}
}

// Event writes one event frame and flushes.
func (w *Writer) Event(name string, data []byte) error {
	w.buf = AppendEvent(w.buf[:0], name, data)
	return w.send()
}

// Comment writes a comment frame and flushes.
func (w *Writer) Comment(text string) error {
	w.buf = AppendComment(w.buf[:0], text)
	return w.send()
}

// Raw writes pre-built frames (for example several AppendEvent results)
// and flushes.
func (w *Writer) Raw(frames []byte) error {
	if _, err := w.w.Write(frames); err != nil {
		return err
	}
	if w.flush != nil {
		return w.flush()
	}
	return nil
}

func (w *Writer) send() error { return w.Raw(w.buf) }
