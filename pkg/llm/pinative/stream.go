package pinative

import (
	"context"
	"errors"
	"io"

	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/llm"
)

// Response header values.
const (
	// ContentTypeSSE is the Content-Type of a streaming answer.
	ContentTypeSSE = "text/event-stream; charset=utf-8"
	// ContentTypeJSON is the Content-Type of JSON answers and errors.
	ContentTypeJSON = "application/json; charset=utf-8"
	// ErrorCacheControl is the Cache-Control of error answers.
	ErrorCacheControl = "no-store"
)

// doneFrame ends every pi-native stream.
const doneFrame = "data: [DONE]\n\n"

// AppendFrame appends the SSE frame of ev: "data: <json>\n\n", no event
// line.
func AppendFrame(dst []byte, ev *llm.Event) []byte {
	dst = append(dst, "data: "...)
	dst = AppendEvent(dst, ev)
	return append(dst, '\n', '\n')
}

// AppendDone appends the closing "data: [DONE]" frame.
func AppendDone(dst []byte) []byte { return append(dst, doneFrame...) }

// AppendFailure appends the frame sent when the stream itself fails
// without a canonical error event: {"type":"error","reason":"error",
// "errorMessage":…}, followed by [DONE].
func AppendFailure(dst []byte, msg string) []byte {
	dst = append(dst, `data: {"type":"error","reason":"error","errorMessage":`...)
	dst = jsonw.Plain(dst, msg)
	dst = append(dst, "}\n\n"...)
	return AppendDone(dst)
}

// ErrNoTerminal reports an upstream stream that ended without done/error.
var ErrNoTerminal = errors.New("stream ended without a terminal event")

// WriteStream encodes s onto w, calling flush (may be nil) after every
// frame: each event until done or error, then [DONE]. A stream that ends
// without a terminal event gets the failure frame. It stops early, without
// [DONE], when ctx is cancelled (the client is gone) and returns the first
// write or flush error. The caller sets the headers and closes s.
func WriteStream(ctx context.Context, w io.Writer, flush func() error, s *llm.Stream) error {
	buf := make([]byte, 0, 8192)
	send := func() error {
		if _, err := w.Write(buf); err != nil {
			return err
		}
		if flush != nil {
			return flush()
		}
		return nil
	}
	terminal := false
	for ev := range s.Events() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		buf = AppendFrame(buf[:0], &ev)
		if ev.Type.IsTerminal() {
			terminal = true
			buf = AppendDone(buf)
		}
		if err := send(); err != nil {
			return err
		}
		if terminal {
			return nil
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	buf = AppendFailure(buf[:0], ErrNoTerminal.Error())
	return send()
}

// AppendResponse appends the non-streaming body {"message": <message>}.
func AppendResponse(dst []byte, m *llm.Message) []byte {
	dst = append(dst, `{"message":`...)
	dst = AppendMessage(dst, m)
	return append(dst, '}')
}

// AppendError appends the pi-native error envelope
// {"error":{"type":…,"message":…}}.
func AppendError(dst []byte, errType, msg string) []byte {
	dst = append(dst, `{"error":{"type":`...)
	dst = jsonw.Plain(dst, errType)
	dst = append(dst, `,"message":`...)
	dst = jsonw.Plain(dst, msg)
	return append(dst, `}}`...)
}

// ErrorType returns the pi-native error type for an HTTP status.
func ErrorType(status int) string {
	switch {
	case status == 401 || status == 403:
		return "authentication_error"
	case status == 429:
		return "rate_limit_error"
	case status == 499:
		return "request_aborted"
	case status >= 400 && status < 500:
		return "invalid_request_error"
	}
	return "upstream_error"
}
