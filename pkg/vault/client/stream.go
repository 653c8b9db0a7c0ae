package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net/http"
	"strings"

	"github.com/ompgo/omp/internal/sse"
	"github.com/ompgo/omp/pkg/vault/api"
)

// Stream is an open GET /v1/snapshot/stream connection. Next returns its
// events; the first is always a snapshot. Close (or cancelling the context
// given to Client.Stream) ends it. A Stream is used by one goroutine.
type Stream struct {
	ctx    context.Context
	body   io.ReadCloser
	status int
	r      *sse.Reader
	seen   bool
	err    error
}

// Stream opens the snapshot stream. It has no timeout: cancel ctx or Close
// to end it. A 404 yields an error matching ErrStreamUnsupported (message
// "Auth broker does not support /v1/snapshot/stream"); other statuses
// "Auth broker stream failed: <status> <text>"; a non-SSE content type
// "Auth broker stream returned non-SSE response".
func (c *Client) Stream(ctx context.Context) (*Stream, error) {
	if ctx.Err() != nil {
		return nil, aborted(ctx)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.streamURL(), nil)
	if err != nil {
		return nil, &Error{Message: "Auth broker request failed: invalid URL", Err: err}
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set(api.CapabilitiesHeader, Capabilities)
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, aborted(ctx)
		}
		return nil, &Error{Message: "Auth broker stream failed: " + err.Error(), Err: err}
	}
	if resp.StatusCode == http.StatusNotFound {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return nil, &Error{Status: http.StatusNotFound, Message: "Auth broker does not support /v1/snapshot/stream", Err: ErrStreamUnsupported}
	}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		return nil, httpError("Auth broker stream failed: ", resp, b)
	}
	c.noteCapabilities(resp.Header)
	ct := resp.Header.Get("Content-Type")
	if mt, _, _ := strings.Cut(ct, ";"); !strings.EqualFold(strings.TrimSpace(mt), "text/event-stream") {
		resp.Body.Close()
		return nil, &Error{Status: resp.StatusCode, Body: ct, Message: "Auth broker stream returned non-SSE response"}
	}
	return &Stream{ctx: ctx, body: resp.Body, status: resp.StatusCode, r: newStreamReader(resp.Body)}, nil
}

// Next returns the next event. Comment frames are skipped. Errors (all
// *Error, sticky): "Auth broker stream returned malformed JSON", "Auth broker
// stream event failed schema validation", "Auth broker stream did not start
// with snapshot", "Auth broker stream ended unexpectedly" / "… ended before
// initial snapshot", and "Auth broker request aborted" once ctx is done.
func (s *Stream) Next() (api.Event, error) {
	if s.err != nil {
		return api.Event{}, s.err
	}
	ev, err := s.next()
	if err != nil {
		s.err = err
		s.body.Close()
	}
	return ev, err
}

func (s *Stream) next() (api.Event, error) {
	for {
		raw, err := s.r.Next()
		if err == nil && raw.Unterminated {
			err = io.EOF // the format drops an event without its blank line
		}
		if err != nil {
			if s.ctx.Err() != nil {
				return api.Event{}, aborted(s.ctx)
			}
			if errors.Is(err, sse.ErrTooLong) {
				return api.Event{}, &Error{Status: s.status, Message: "Auth broker stream returned malformed JSON", Err: err}
			}
			msg := "Auth broker stream ended unexpectedly"
			if !s.seen {
				msg = "Auth broker stream ended before initial snapshot"
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return api.Event{}, &Error{Status: s.status, Message: msg, Err: err}
		}
		if raw.Name == "" && len(raw.Data) == 0 {
			continue
		}
		if !json.Valid(raw.Data) {
			// The frame may hold credentials: it is not kept on the error.
			return api.Event{}, &Error{Message: "Auth broker stream returned malformed JSON"}
		}
		ev, err := api.DecodeEvent(raw.Data) // copies: raw.Data is reused by the next read
		if err != nil {
			return api.Event{}, &Error{Body: err.Error(), Message: "Auth broker stream event failed schema validation", Err: err}
		}
		if !s.seen {
			s.seen = true
			if ev.Kind != api.KindSnapshot {
				return api.Event{}, &Error{Body: "kind " + ev.Kind, Message: "Auth broker stream did not start with snapshot"}
			}
		}
		return ev, nil
	}
}

// All iterates the events until the first error, which it yields last.
func (s *Stream) All() iter.Seq2[api.Event, error] {
	return func(yield func(api.Event, error) bool) {
		for {
			ev, err := s.Next()
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

// Close ends the stream.
func (s *Stream) Close() error {
	if s.err == nil {
		s.err = &Error{Message: "Auth broker request aborted", Err: context.Canceled}
	}
	return s.body.Close()
}

// maxStreamEvent bounds one line and one event of the snapshot stream (a
// snapshot frame is one data line; 64 MiB is far above any realistic vault).
const maxStreamEvent = 64 << 20

func newStreamReader(r io.Reader) *sse.Reader {
	rd := sse.NewReader(r)
	rd.SetMaxSize(maxStreamEvent)
	return rd
}
