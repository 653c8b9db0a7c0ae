package llm

import (
	"context"
	"errors"
	"io"
	"iter"
)

// EventType is the kind of a canonical stream event.
type EventType uint8

// Event types, in the grammar
//
//	start ( text_start text_delta* text_end | thinking_… | toolcall_… )* ( done | error )
const (
	EventStart EventType = iota + 1
	EventTextStart
	EventTextDelta
	EventTextEnd
	EventThinkingStart
	EventThinkingDelta
	EventThinkingEnd
	EventToolCallStart
	EventToolCallDelta
	EventToolCallEnd
	EventDone
	EventError
)

var eventNames = [...]string{
	EventStart: "start", EventTextStart: "text_start", EventTextDelta: "text_delta", EventTextEnd: "text_end",
	EventThinkingStart: "thinking_start", EventThinkingDelta: "thinking_delta", EventThinkingEnd: "thinking_end",
	EventToolCallStart: "toolcall_start", EventToolCallDelta: "toolcall_delta", EventToolCallEnd: "toolcall_end",
	EventDone: "done", EventError: "error",
}

// String returns the pi-native event type name ("text_delta", …).
func (t EventType) String() string {
	if int(t) < len(eventNames) && eventNames[t] != "" {
		return eventNames[t]
	}
	return "unknown"
}

// ParseEventType returns the EventType named s, or 0.
func ParseEventType(s string) EventType {
	for i, n := range eventNames {
		if n == s && n != "" {
			return EventType(i)
		}
	}
	return 0
}

// IsDelta reports whether t is a *_delta event.
func (t EventType) IsDelta() bool {
	return t == EventTextDelta || t == EventThinkingDelta || t == EventToolCallDelta
}

// IsTerminal reports whether t is done or error.
func (t EventType) IsTerminal() bool { return t == EventDone || t == EventError }

// Event is one canonical stream event. It is a plain value; Partial and
// Message point into state owned by the producer.
type Event struct {
	Type EventType
	// ContentIndex is the block's position in Partial.Content (block events).
	ContentIndex int
	// Delta is the text, thinking or raw argument-JSON fragment of a
	// *_delta event. It stays valid after the event (a Builder's Delta
	// views its block buffer, whose bytes are never rewritten).
	Delta string
	// Content is the block's full text on text_end and thinking_end.
	Content string
	// Reason is the stop reason of done (stop, length, toolUse) or error
	// (error, aborted).
	Reason StopReason
	// Partial is the in-progress assistant message. The producer keeps
	// mutating it: a consumer must copy what it needs before asking for
	// the next event. On done and error it is the final message (the
	// pi-native `message` / `error` field).
	Partial *Message
	// Err is the cause of an error event: an *UpstreamError when the
	// upstream reported one, context.Canceled when aborted.
	Err error
}

// Block returns the content block the event refers to, or nil.
func (e *Event) Block() *Content {
	if e.Partial == nil || e.Type == EventStart || e.Type.IsTerminal() ||
		e.ContentIndex < 0 || e.ContentIndex >= len(e.Partial.Content) {
		return nil
	}
	return &e.Partial.Content[e.ContentIndex]
}

// Stream is an open canonical event stream: a single-use sequence of events
// that ends with exactly one done or error event, plus the resource
// (usually the upstream response body) behind it.
type Stream struct {
	seq    iter.Seq[Event]
	closer io.Closer
}

// NewStream returns a Stream over seq. closer (may be nil) is closed by
// Close; seq must also release its resources when the consumer stops
// ranging early.
func NewStream(seq iter.Seq[Event], closer io.Closer) *Stream {
	return &Stream{seq: seq, closer: closer}
}

// Events returns the event sequence. Range over it once; breaking out
// early is allowed (call Close afterwards).
func (s *Stream) Events() iter.Seq[Event] { return s.seq }

// Close releases the stream's resources. It is safe to call more than once.
func (s *Stream) Close() error {
	if s.closer == nil {
		return nil
	}
	c := s.closer
	s.closer = nil
	return c.Close()
}

// Collect drains s and returns the final message. A done event yields the
// message and nil; an error event yields the message (with its
// ErrorMessage) and an error wrapping the event's Err (an *UpstreamError,
// context.Canceled, …). A stream without a terminal event is an error.
func Collect(s *Stream) (*Message, error) {
	defer s.Close()
	for ev := range s.Events() {
		switch ev.Type {
		case EventDone:
			m := *ev.Partial
			return &m, nil
		case EventError:
			m := *ev.Partial
			if ev.Err != nil {
				return &m, ev.Err
			}
			return &m, errors.New(m.ErrorMessage)
		}
	}
	return nil, ErrTruncated
}

// ErrTruncated reports a stream that ended without a terminal event.
var ErrTruncated = errors.New("llm: stream ended without a terminal event")

// Provider calls one upstream API.
type Provider interface {
	// Stream sends req to the model and returns its canonical event
	// stream. It returns an error, and no Stream, only when the upstream
	// failed before answering 2xx (an *UpstreamError carrying the status
	// and retry-after) or the request could not be built; every later
	// failure, cancellation of ctx included, is the stream's error event.
	// The caller must Close the returned stream. req and model are read,
	// never changed, and not kept past the call.
	Stream(ctx context.Context, req *Request, model *Model, cred Credential) (*Stream, error)
}
