package httpx

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// Body read bounds of Serve.
const (
	// DefaultBodyReadTimeout is how long a request body may go without
	// sending a byte.
	DefaultBodyReadTimeout = 30 * time.Second
	// DefaultBodyTotalTimeout is how long reading a whole request body may
	// take, however steadily it arrives.
	DefaultBodyTotalTimeout = 2 * time.Minute
)

// MsgBodyTimeout is the client text of a request body that stalled or took
// too long: 408 Request Timeout, and the connection is closed.
const MsgBodyTimeout = "request body read timed out"

// deadlineBody bounds the reading of a request body with connection read
// deadlines: each read that brings bytes pushes the deadline to
// ReadTimeout from now (never past the total cap), and the end of the body
// clears it, so a long response that follows (a stream, a long-poll) has
// no read deadline. A read that hits the deadline fails with a 408 *Error
// and marks the response Connection: close.
type deadlineBody struct {
	body  io.ReadCloser
	w     http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
	end   time.Time // total cap
	done  bool      // EOF or failure seen: deadlines no longer managed
}

// boundBody arms the read deadline of r's connection and returns the
// body that keeps it; nil when w cannot set deadlines (then the body is
// left as it is).
func boundBody(w http.ResponseWriter, r *http.Request, stall, total time.Duration) io.ReadCloser {
	now := time.Now()
	b := &deadlineBody{body: r.Body, w: w, rc: http.NewResponseController(w), stall: stall, end: now.Add(total)}
	if err := b.rc.SetReadDeadline(b.next(now)); err != nil {
		return nil
	}
	return b
}

func (b *deadlineBody) next(now time.Time) time.Time {
	d := now.Add(b.stall)
	if d.After(b.end) {
		return b.end
	}
	return d
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if b.done {
		return n, err
	}
	switch {
	case err == io.EOF:
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		b.done = true
		b.w.Header().Set("Connection", "close")
		return n, &Error{Status: http.StatusRequestTimeout, Message: MsgBodyTimeout, Err: err}
	case n > 0:
		_ = b.rc.SetReadDeadline(b.next(time.Now()))
	}
	return n, err
}

func (b *deadlineBody) Close() error { return b.body.Close() }

// ParseBodyReadTimeout parses a value of EnvBodyReadTimeout: a positive Go
// duration such as "30s"; "" is 0, which means the default.
func ParseBodyReadTimeout(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q is not a positive duration such as 30s", EnvBodyReadTimeout, v)
	}
	return d, nil
}
