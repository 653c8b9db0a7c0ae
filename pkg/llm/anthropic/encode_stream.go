package anthropic

import (
	"context"
	"errors"

	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/llm"
)

// StreamEncoder turns canonical events into Anthropic SSE frames, keeping
// every rule a strict Anthropic SDK checks: an `event:` line equal to data.type,
// dense block indices from 0, tool_use starts with input {} and arguments
// only through input_json_delta, one signature_delta per thinking block,
// usage on message_delta, message_stop at the end of a successful stream
// and `event: error` for a failed one. It appends to a caller buffer and
// does not allocate once that buffer has grown.
type StreamEncoder struct {
	model string
	id    string

	next     int  // next Anthropic block index
	emitted  int  // canonical blocks handled so far (content[:emitted])
	open     bool // an Anthropic block is open
	openIdx  int  // its Anthropic index
	started  bool
	finished bool
}

// NewStreamEncoder returns an encoder for one response. model is the id
// the client asked for; id is the message id to use when the upstream
// reported none (the gateway makes "msg_" + 24 hex).
func NewStreamEncoder(model, id string) *StreamEncoder {
	return &StreamEncoder{model: model, id: id}
}

// Ping appends a ping event (the A keepalive).
func (e *StreamEncoder) Ping(dst []byte) []byte {
	return append(dst, "event: ping\ndata: {\"type\":\"ping\"}\n\n"...)
}

// Finished reports whether a terminal frame was written.
func (e *StreamEncoder) Finished() bool { return e.finished }

func frameStart(dst []byte, name string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, name...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, name...)
	return append(dst, '"')
}

func frameEnd(dst []byte) []byte { return append(dst, "}\n\n"...) }

// Encode appends the frames for ev to dst. Events after the terminal one
// append nothing. An aborted error appends nothing: the client is gone.
func (e *StreamEncoder) Encode(dst []byte, ev *llm.Event) []byte {
	if e.finished {
		return dst
	}
	m := ev.Partial
	if !e.started && ev.Type != llm.EventStart {
		if ev.Type == llm.EventError && ev.Reason == llm.StopAborted {
			e.finished = true
			return dst
		}
		dst = e.messageStart(dst, m)
	}
	switch ev.Type {
	case llm.EventStart:
		if !e.started {
			dst = e.messageStart(dst, m)
		}
	case llm.EventTextStart, llm.EventThinkingStart, llm.EventToolCallStart:
		dst = e.catchUp(dst, m, ev.ContentIndex)
		dst = e.closeOpen(dst)
		c := &m.Content[ev.ContentIndex]
		dst = frameStart(dst, "content_block_start")
		dst = append(dst, `,"index":`...)
		dst = jsonw.Int(dst, int64(e.next))
		switch ev.Type {
		case llm.EventTextStart:
			dst = append(dst, `,"content_block":{"type":"text","text":""}`...)
		case llm.EventThinkingStart:
			dst = append(dst, `,"content_block":{"type":"thinking","thinking":"","signature":""}`...)
		default:
			dst = append(dst, `,"content_block":{"type":"tool_use","id":`...)
			dst = jsonw.String(dst, c.ID)
			dst = append(dst, `,"name":`...)
			dst = jsonw.String(dst, c.Name)
			dst = append(dst, `,"input":{}}`...)
		}
		dst = frameEnd(dst)
		e.open, e.openIdx = true, e.next
		e.next++
		e.emitted = ev.ContentIndex + 1
	case llm.EventTextDelta:
		dst = e.delta(dst, `{"type":"text_delta","text":`, ev.Delta)
	case llm.EventThinkingDelta:
		dst = e.delta(dst, `{"type":"thinking_delta","thinking":`, ev.Delta)
	case llm.EventToolCallDelta:
		dst = e.delta(dst, `{"type":"input_json_delta","partial_json":`, ev.Delta)
	case llm.EventThinkingEnd:
		if c := ev.Block(); c != nil && c.ThinkingSignature != "" && e.open {
			dst = e.delta(dst, `{"type":"signature_delta","signature":`, clientSignature(m, c.ThinkingSignature))
		}
		dst = e.closeOpen(dst)
	case llm.EventTextEnd, llm.EventToolCallEnd:
		dst = e.closeOpen(dst)
	case llm.EventDone:
		dst = e.finish(dst, m, ev.Reason)
	case llm.EventError:
		switch {
		case ev.Reason == llm.StopAborted || errors.Is(ev.Err, context.Canceled):
			e.finished = true
		case m != nil && m.Stop.Safety:
			dst = e.finish(dst, m, llm.StopError)
		default:
			dst = e.closeOpen(dst)
			_, typ := ErrorStatus(eventErr(ev))
			dst = append(dst, "event: error\ndata: "...)
			dst = AppendErrorBody(dst, typ, errMessage(ev))
			dst = append(dst, "\n\n"...)
			e.finished = true
		}
	}
	return dst
}

func eventErr(ev *llm.Event) error {
	if ev.Err != nil {
		return ev.Err
	}
	return errors.New(errMessage(ev))
}

func errMessage(ev *llm.Event) string {
	if ev.Partial != nil && ev.Partial.ErrorMessage != "" {
		return ev.Partial.ErrorMessage
	}
	if ev.Err != nil {
		return ev.Err.Error()
	}
	return "upstream error"
}

func (e *StreamEncoder) messageStart(dst []byte, m *llm.Message) []byte {
	e.started = true
	id := e.id
	var u llm.Usage
	if m != nil {
		if m.ResponseID != "" {
			id = m.ResponseID
		}
		u = m.Usage
	}
	dst = frameStart(dst, "message_start")
	dst = append(dst, `,"message":{"id":`...)
	dst = jsonw.String(dst, id)
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = jsonw.String(dst, e.model)
	dst = append(dst, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	out := u.Output
	if out == 0 {
		out = 1 // the real API's placeholder
	}
	dst = appendUsage(dst, u.Input, u.CacheWrite, u.CacheRead, out)
	dst = append(dst, '}')
	return frameEnd(dst)
}

func appendUsage(dst []byte, in, cacheWrite, cacheRead, out int64) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = jsonw.Int(dst, in)
	dst = append(dst, `,"cache_creation_input_tokens":`...)
	dst = jsonw.Int(dst, cacheWrite)
	dst = append(dst, `,"cache_read_input_tokens":`...)
	dst = jsonw.Int(dst, cacheRead)
	dst = append(dst, `,"output_tokens":`...)
	dst = jsonw.Int(dst, out)
	return append(dst, '}')
}

func (e *StreamEncoder) delta(dst []byte, prefix, s string) []byte {
	if !e.open {
		return dst
	}
	dst = frameStart(dst, "content_block_delta")
	dst = append(dst, `,"index":`...)
	dst = jsonw.Int(dst, int64(e.openIdx))
	dst = append(dst, `,"delta":`...)
	dst = append(dst, prefix...)
	dst = jsonw.String(dst, s)
	dst = append(dst, '}')
	return frameEnd(dst)
}

func (e *StreamEncoder) closeOpen(dst []byte) []byte {
	if !e.open {
		return dst
	}
	e.open = false
	dst = frameStart(dst, "content_block_stop")
	dst = append(dst, `,"index":`...)
	dst = jsonw.Int(dst, int64(e.openIdx))
	return frameEnd(dst)
}

// catchUp emits the complete blocks that produced no events (redacted
// thinking, Anthropic native blocks) found before canonical index upTo.
// Native blocks of other families are skipped without using an index.
func (e *StreamEncoder) catchUp(dst []byte, m *llm.Message, upTo int) []byte {
	if m == nil {
		return dst
	}
	if upTo > len(m.Content) {
		upTo = len(m.Content)
	}
	for ; e.emitted < upTo; e.emitted++ {
		c := &m.Content[e.emitted]
		var block []byte
		switch {
		case c.Type == llm.ContentRedactedThinking:
			dst = e.closeOpen(dst)
			dst = frameStart(dst, "content_block_start")
			dst = append(dst, `,"index":`...)
			dst = jsonw.Int(dst, int64(e.next))
			dst = append(dst, `,"content_block":{"type":"redacted_thinking","data":`...)
			dst = jsonw.String(dst, c.Data)
			dst = append(dst, '}')
		case c.Type == llm.ContentNative && c.NativeAPI() == llm.APIAnthropic && len(c.Raw()) > 0:
			block = c.Raw()
			dst = e.closeOpen(dst)
			dst = frameStart(dst, "content_block_start")
			dst = append(dst, `,"index":`...)
			dst = jsonw.Int(dst, int64(e.next))
			dst = append(dst, `,"content_block":`...)
			dst = append(dst, block...)
		default:
			continue
		}
		dst = frameEnd(dst)
		e.open, e.openIdx = true, e.next
		e.next++
		dst = e.closeOpen(dst)
	}
	return dst
}

func (e *StreamEncoder) finish(dst []byte, m *llm.Message, reason llm.StopReason) []byte {
	dst = e.closeOpen(dst)
	var u llm.Usage
	if m != nil {
		dst = e.catchUp(dst, m, len(m.Content))
		u = m.Usage
	}
	sr, seq := messageStop(reason, m)
	dst = frameStart(dst, "message_delta")
	dst = append(dst, `,"delta":{"stop_reason":`...)
	dst = jsonw.String(dst, sr)
	dst = append(dst, `,"stop_sequence":`...)
	if seq == "" {
		dst = append(dst, "null"...)
	} else {
		dst = jsonw.String(dst, seq)
	}
	dst = append(dst, `},"usage":`...)
	dst = appendUsage(dst, u.Input, u.CacheWrite, u.CacheRead, u.Output)
	dst = frameEnd(dst)
	dst = append(dst, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
	e.finished = true
	return dst
}

// AppendErrorBody appends the Anthropic error envelope
// {"type":"error","error":{"type":T,"message":M}}.
func AppendErrorBody(dst []byte, typ, message string) []byte {
	dst = append(dst, `{"type":"error","error":{"type":`...)
	dst = jsonw.String(dst, typ)
	dst = append(dst, `,"message":`...)
	dst = jsonw.String(dst, message)
	return append(dst, "}}"...)
}

// EncodeError returns the HTTP status and JSON body for a request that
// failed before any byte was sent.
func EncodeError(err error) (status int, body []byte) {
	status, typ := ErrorStatus(err)
	msg := "internal error"
	var ir *llm.InvalidRequestError
	var ue *llm.UpstreamError
	switch {
	case errors.As(err, &ir):
		msg = ir.Message
	case errors.As(err, &ue):
		msg = ue.Message
		if msg == "" {
			msg = ue.Error()
		}
	case err != nil:
		msg = err.Error()
	}
	return status, AppendErrorBody(nil, typ, msg)
}
