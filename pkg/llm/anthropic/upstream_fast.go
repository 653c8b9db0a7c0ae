package anthropic

import (
	"strconv"

	"github.com/ompgo/omp/pkg/llm/internal/jsonr"
)

// wireEventKeys are the fields wireEvent decodes; deltaKeys those of its
// delta.
var (
	wireEventKeys = []string{"type", "message", "index", "content_block", "delta", "usage", "error"}
	deltaKeys     = []string{"type", "text", "partial_json", "thinking", "signature", "stop_reason", "stop_sequence"}
)

// fastDelta decodes the bulk of a stream, a content_block_delta carrying
// text, thinking or tool-input JSON (and the bare content_block_stop and
// message_stop events), without encoding/json and without
// allocating: into s.fastEv, with strings that view data (or the reader's
// arena, reused) and die with the next event. It accepts only exact keys
// seen once, with the expected kinds; for anything else (other events,
// signature deltas, whose text the Builder may keep as is) it reports
// false and next decodes the event with encoding/json.
func (s *streamState) fastDelta(data []byte) (*wireEvent, bool) {
	r := &s.fastRd
	r.ResetReuse(data)
	s.fastDeltaBuf = wireDelta{}
	we := &s.fastEv
	*we = wireEvent{Delta: &s.fastDeltaBuf}
	if !r.BeginObject() {
		return nil, false
	}
	var seen uint8
	for r.More() {
		k := r.Key()
		switch string(k) {
		case "type":
			if seen&1 != 0 || r.Peek() != '"' {
				return nil, false
			}
			seen |= 1
			we.Type = r.String()
		case "index":
			if seen&2 != 0 || r.Peek() == '"' || r.Peek() == 'n' {
				return nil, false
			}
			seen |= 2
			n, err := strconv.Atoi(string(r.Number()))
			if err != nil {
				return nil, false
			}
			we.Index = n
		case "delta":
			if seen&4 != 0 || r.Peek() != '{' || !s.fastDeltaBody(r) {
				return nil, false
			}
			seen |= 4
		default:
			if jsonr.FoldsTo(k, wireEventKeys...) {
				return nil, false
			}
			r.Skip()
		}
	}
	if r.End() != nil || seen&1 == 0 {
		return nil, false
	}
	if seen&4 == 0 {
		// content_block_stop and message_stop carry nothing else: two of
		// the five framing events of every stream.
		if we.Type == "content_block_stop" || we.Type == "message_stop" {
			we.Delta = nil
			return we, true
		}
		return nil, false
	}
	if we.Type != "content_block_delta" {
		return nil, false
	}
	switch we.Delta.Type {
	case "text_delta", "thinking_delta", "input_json_delta":
		return we, true
	}
	return nil, false
}

func (s *streamState) fastDeltaBody(r *jsonr.Reader) bool {
	d := s.fastEv.Delta
	r.BeginObject()
	var seen uint8
	for r.More() {
		k := r.Key()
		var dst *string
		var bit uint8
		switch string(k) {
		case "type":
			dst, bit = &d.Type, 1
		case "text":
			dst, bit = &d.Text, 2
		case "partial_json":
			dst, bit = &d.PartialJSON, 4
		case "thinking":
			dst, bit = &d.Thinking, 8
		default:
			if jsonr.FoldsTo(k, deltaKeys...) {
				return false
			}
			r.Skip()
			continue
		}
		if seen&bit != 0 || r.Peek() != '"' {
			return false
		}
		seen |= bit
		*dst = r.String()
	}
	return r.Err() == nil
}
