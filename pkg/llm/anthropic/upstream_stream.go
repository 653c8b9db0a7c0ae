package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/ompgo/omp/internal/sse"
	"github.com/ompgo/omp/pkg/llm"
)

// streamState parses one upstream SSE response into canonical events.
type streamState struct {
	p     *Provider
	ctx   context.Context
	model llm.Model
	oauth bool
	body  io.ReadCloser
	rd    *sse.Reader
	reqID string

	first *wireEvent // peeked first event
	// fast backs fastEvent's events; noFast (tests) turns it off.
	fast    fastBufs
	noFast  bool
	b       *llm.Builder
	native  *nativeBlock // an open block without a canonical slot
	stop    string
	stopSeq string
}

// nativeBlock accumulates a block type the canonical stream has no event
// for (server_tool_use, web_search_tool_result, …).
type nativeBlock struct {
	raw   json.RawMessage
	input []byte
}

// next reads and decodes the next upstream event. io.EOF means the body
// ended.
func (s *streamState) next() (*wireEvent, error) {
	for {
		ev, err := s.rd.Next()
		if err != nil {
			return nil, err
		}
		if ev.Name == "ping" {
			continue
		}
		if !s.noFast {
			if we, ok := s.fastEvent(ev.Data); ok {
				return we, nil
			}
		}
		var we wireEvent
		if err := json.Unmarshal(ev.Data, &we); err != nil {
			if ev.Unterminated {
				return nil, io.EOF
			}
			return nil, &llm.UpstreamError{Provider: providerID(s.model), Message: "malformed stream event", Err: err}
		}
		if we.Type == "" && ev.Name == "error" {
			we.Type = "error"
		}
		if we.Type == "ping" || we.Type == "" {
			continue
		}
		return &we, nil
	}
}

func (s *streamState) peek() error {
	we, err := s.next()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil // reported as truncation by run
		}
		return s.readErr(err)
	}
	if we.Type == "error" {
		return s.eventErr(we)
	}
	s.first = we
	return nil
}

func (s *streamState) eventErr(we *wireEvent) *llm.UpstreamError {
	ue := &llm.UpstreamError{Provider: providerID(s.model), Status: 200, RequestID: s.reqID, Message: "upstream error"}
	if we.Error != nil {
		ue.Type, ue.Message = we.Error.Type, we.Error.Message
		if st, ok := anthropicTypes[ue.Type]; ok {
			ue.Status = st
		}
	}
	return ue
}

func (s *streamState) readErr(err error) error {
	if ctxErr := s.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var ue *llm.UpstreamError
	if errors.As(err, &ue) {
		return err
	}
	return &llm.UpstreamError{Provider: providerID(s.model), Message: "reading stream failed", Err: err}
}

// run is the event sequence: it drives a Builder from upstream events.
func (s *streamState) run(yield func(llm.Event) bool) {
	defer s.body.Close()
	s.b = llm.NewBuilder(llm.APIAnthropic, providerID(s.model), s.model.ID, yield)
	s.b.Message().Timestamp = s.p.now().UnixMilli()
	for {
		var we *wireEvent
		if s.first != nil {
			we, s.first = s.first, nil
		} else {
			var err error
			we, err = s.next()
			if err != nil {
				if errors.Is(err, io.EOF) {
					if ctxErr := s.ctx.Err(); ctxErr != nil {
						s.b.Fail(ctxErr)
					} else {
						s.b.Fail(&llm.UpstreamError{Provider: providerID(s.model), Message: errTruncated.Error(), Err: errTruncated})
					}
					return
				}
				s.b.Fail(s.readErr(err))
				return
			}
		}
		if !s.handle(we) {
			return
		}
	}
}

func applyUsage(u *llm.Usage, w *wireUsage) {
	if w == nil {
		return
	}
	if w.InputTokens != nil {
		u.Input = *w.InputTokens
	}
	if w.OutputTokens != nil {
		u.Output = *w.OutputTokens
	}
	if w.CacheReadInputTokens != nil {
		u.CacheRead = *w.CacheReadInputTokens
	}
	if w.CacheCreationInputTokens != nil {
		u.CacheWrite = *w.CacheCreationInputTokens
	}
}

// handle applies one upstream event; false ends the stream.
func (s *streamState) handle(we *wireEvent) bool {
	b := s.b
	m := b.Message()
	switch we.Type {
	case "message_start":
		if we.Message != nil {
			m.ResponseID = we.Message.ID
			if we.Message.Model != "" {
				m.Model = we.Message.Model
			}
			applyUsage(&m.Usage, we.Message.Usage)
		}
		return b.Start()
	case "content_block_start":
		return s.blockStart(we.ContentBlock)
	case "content_block_delta":
		d := we.Delta
		if d == nil {
			return true
		}
		switch d.Type {
		case "text_delta":
			return b.Text(d.Text)
		case "thinking_delta":
			return b.Thinking(d.Thinking)
		case "signature_delta":
			b.AddThinkingSignature(d.Signature)
			return true
		case "input_json_delta":
			if s.native != nil {
				s.native.input = append(s.native.input, d.PartialJSON...)
				return true
			}
			b.ToolArgs(d.PartialJSON)
			return !b.Ended()
		}
		return true // citations_delta and unknown deltas: no canonical slot
	case "content_block_stop":
		if s.native != nil {
			return s.nativeStop()
		}
		return b.EndBlock()
	case "message_delta":
		if we.Delta != nil {
			s.stop = we.Delta.StopReason
			if we.Delta.StopSequence != nil {
				s.stopSeq = *we.Delta.StopSequence
			}
		}
		applyUsage(&m.Usage, we.Usage)
		return true
	case "message_stop":
		s.done()
		return false
	case "error":
		b.Fail(s.eventErr(we))
		return false
	}
	return true // unknown event types are ignored
}

// blockStart, nativeStop and done are cases of handle.
func (s *streamState) blockStart(cb *wireBlock) bool {
	b := s.b
	if cb == nil {
		return true
	}
	switch cb.Type {
	case "text":
		return b.StartText() && b.Text(cb.Text)
	case "thinking":
		if !b.StartThinking() || !b.Thinking(cb.Thinking) {
			return false
		}
		if cb.Signature != "" {
			b.AddThinkingSignature(cb.Signature)
		}
		return true
	case "tool_use":
		if !b.StartToolCall(cb.ID, canonicalToolName(cb.Name, s.oauth)) {
			return false
		}
		if in := string(cb.Input); in != "" && in != "{}" && in != "null" {
			return b.ToolArgs(in)
		}
		return true
	case "redacted_thinking":
		return b.AddBlock(llm.Content{Type: llm.ContentRedactedThinking, Data: cb.Data})
	default:
		if !b.EndBlock() {
			return false
		}
		s.native = &nativeBlock{raw: cb.raw}
		return true
	}
}

func (s *streamState) nativeStop() bool {
	nb := s.native
	s.native = nil
	return s.b.AddBlock(llm.Native(llm.APIAnthropic, nb.withInput()))
}

func (s *streamState) done() {
	b := s.b
	m := b.Message()
	reason, detail := StopFromWire(s.stop, s.stopSeq)
	m.Stop = detail
	m.Usage = m.Usage.WithCost(s.model.Cost)
	if detail.Safety {
		m.ErrorMessage = "The model refused to answer (stop_reason refusal)"
	}
	b.Done(reason)
}

// withInput returns the block with its streamed input, if any, set.
func (nb *nativeBlock) withInput() json.RawMessage {
	if len(nb.input) == 0 {
		return nb.raw
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(nb.raw, &fields) != nil {
		return nb.raw
	}
	fields["input"] = llm.FinalizeArguments(string(nb.input))
	out, err := json.Marshal(fields)
	if err != nil {
		return nb.raw
	}
	return out
}
