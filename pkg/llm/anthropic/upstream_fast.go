package anthropic

import (
	"strconv"
	"strings"

	"github.com/ompgo/omp/internal/jsonr"
)

// The known fields of each object fastEvent reads: a key that is not one
// of them exactly but folds to one (encoding/json matches keys without
// case) sends the event to encoding/json.
var (
	wireEventKeys = []string{"type", "message", "index", "content_block", "delta", "usage", "error"}
	deltaKeys     = []string{"type", "text", "partial_json", "thinking", "signature", "stop_reason", "stop_sequence"}
	messageKeys   = []string{"id", "model", "usage"}
	blockKeys     = []string{"type", "text", "source", "id", "name", "input", "tool_use_id", "content", "is_error",
		"thinking", "signature", "data", "cache_control"}
	usageKeys = []string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}
)

// fastBufs back fastEvent's events. A delta event allocates nothing; the
// once-per-block and once-per-stream events (content_block_start,
// message_start, a stop sequence) get their block, message or string on
// the heap, so the state every open stream holds stays small.
type fastBufs struct {
	rd    jsonr.Reader
	ev    wireEvent
	delta wireDelta
	usage wireUsage // the event's or its message's (not both)
	ints  [4]int64  // its token counts
}

// fastEvent decodes every event of an ordinary stream without
// encoding/json: message_start, content_block_start (text, thinking,
// tool_use, redacted_thinking), content_block_delta (text, thinking,
// tool-input JSON, signature), content_block_stop, message_delta and
// message_stop, into s.fast. Text, thinking and tool-input strings view
// data (or the reader's arena, reused) and die with the next event, as
// the Builder copies them; every string the stream keeps (ids, model,
// names, signatures, stop reasons) is cloned. It accepts only exact keys
// seen once, with the expected kinds; for anything else (other events or
// block types, a key differing only in case, a duplicate) it reports
// false and next decodes the event with encoding/json.
func (s *streamState) fastEvent(data []byte) (*wireEvent, bool) {
	f := &s.fast
	r := &f.rd
	r.ResetReuse(data)
	we := &f.ev
	*we = wireEvent{}
	if !r.BeginObject() {
		return nil, false
	}
	var seen uint8
	once := func(bit uint8) bool {
		ok := seen&bit == 0
		seen |= bit
		return ok
	}
	for r.More() {
		k := r.Key()
		switch string(k) {
		case "type":
			if !once(1) || r.Peek() != '"' {
				return nil, false
			}
			we.Type = r.String()
		case "index":
			if !once(2) || r.Peek() == '"' || r.Peek() == 'n' {
				return nil, false
			}
			n, err := strconv.Atoi(string(r.Number()))
			if err != nil {
				return nil, false
			}
			we.Index = n
		case "delta":
			f.delta = wireDelta{}
			if !once(4) || r.Peek() != '{' || !f.deltaBody() {
				return nil, false
			}
			we.Delta = &f.delta
		case "message":
			m := new(wireMessage)
			if !once(8) || r.Peek() != '{' || !f.message(m) {
				return nil, false
			}
			we.Message = m
		case "content_block":
			b := new(wireBlock)
			if !once(16) || r.Peek() != '{' || !f.blockBody(b) {
				return nil, false
			}
			we.ContentBlock = b
		case "usage":
			if !once(32) || r.Peek() != '{' || !f.usageBody() {
				return nil, false
			}
			we.Usage = &f.usage
		default:
			if jsonr.FoldsTo(k, wireEventKeys...) {
				return nil, false
			}
			r.Skip()
		}
	}
	if r.End() != nil || we.Usage != nil && we.Message != nil && we.Message.Usage != nil {
		return nil, false // one usage buffer
	}
	switch we.Type {
	case "content_block_delta":
		if we.Delta == nil {
			return nil, false
		}
		switch we.Delta.Type {
		case "text_delta", "thinking_delta", "input_json_delta":
		case "signature_delta": // the Builder keeps it as is
			we.Delta.Signature = strings.Clone(we.Delta.Signature)
		default:
			return nil, false
		}
	case "content_block_stop", "message_stop":
	case "message_start":
		if m := we.Message; m != nil {
			m.ID, m.Model = strings.Clone(m.ID), strings.Clone(m.Model)
		}
	case "content_block_start":
		b := we.ContentBlock
		if b == nil {
			return nil, false
		}
		switch b.Type {
		case "text", "thinking":
			b.Signature = strings.Clone(b.Signature)
		case "tool_use":
			b.ID, b.Name = strings.Clone(b.ID), strings.Clone(b.Name)
		case "redacted_thinking":
			b.Data = strings.Clone(b.Data)
		default: // kept raw, as encoding/json's wireBlock does
			return nil, false
		}
	case "message_delta":
		if d := we.Delta; d != nil {
			d.StopReason = stopReason(d.StopReason)
			if d.StopSequence != nil {
				seq := strings.Clone(*d.StopSequence)
				d.StopSequence = &seq
			}
		}
	default:
		return nil, false
	}
	return we, true
}

// stopReason is s without a view of the event: the documented values are
// constants, anything else a copy.
func stopReason(s string) string {
	for _, c := range [...]string{"end_turn", "max_tokens", "tool_use", "stop_sequence", "pause_turn", "refusal"} {
		if s == c {
			return c
		}
	}
	return strings.Clone(s)
}

// deltaBody reads a delta object into f.delta.
func (f *fastBufs) deltaBody() bool {
	r, d := &f.rd, &f.delta
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
		case "signature":
			dst, bit = &d.Signature, 16
		case "stop_reason":
			if seen&32 != 0 {
				return false
			}
			seen |= 32
			if !r.Null() { // null leaves it "" (encoding/json)
				if r.Peek() != '"' {
					return false
				}
				d.StopReason = r.String()
			}
			continue
		case "stop_sequence":
			if seen&64 != 0 {
				return false
			}
			seen |= 64
			if !r.Null() {
				if r.Peek() != '"' {
					return false
				}
				seq := r.String() // a view: fastEvent clones it
				d.StopSequence = &seq
			}
			continue
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

// message reads a message_start's message into m.
func (f *fastBufs) message(m *wireMessage) bool {
	r := &f.rd
	r.BeginObject()
	var seen uint8
	for r.More() {
		k := r.Key()
		switch string(k) {
		case "id", "model":
			bit, dst := uint8(1), &m.ID
			if k[0] == 'm' {
				bit, dst = 2, &m.Model
			}
			if seen&bit != 0 || r.Peek() != '"' {
				return false
			}
			seen |= bit
			*dst = r.String()
		case "usage":
			if seen&4 != 0 || r.Peek() != '{' || !f.usageBody() {
				return false
			}
			seen |= 4
			m.Usage = &f.usage
		default:
			if jsonr.FoldsTo(k, messageKeys...) {
				return false
			}
			r.Skip()
		}
	}
	return r.Err() == nil
}

// blockBody reads a content_block_start's block into b: the fields of the
// block types fastEvent accepts; any other known field declines.
func (f *fastBufs) blockBody(b *wireBlock) bool {
	r := &f.rd
	r.BeginObject()
	var seen uint8
	for r.More() {
		k := r.Key()
		var dst *string
		var bit uint8
		switch string(k) {
		case "type":
			dst, bit = &b.Type, 1
		case "text":
			dst, bit = &b.Text, 2
		case "id":
			dst, bit = &b.ID, 4
		case "name":
			dst, bit = &b.Name, 8
		case "thinking":
			dst, bit = &b.Thinking, 16
		case "signature":
			dst, bit = &b.Signature, 32
		case "data":
			dst, bit = &b.Data, 64
		case "input":
			if seen&128 != 0 {
				return false
			}
			seen |= 128
			b.Input = r.Raw()
			continue
		default:
			if jsonr.FoldsTo(k, blockKeys...) {
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

// usageBody reads a usage object into f.usage, its counts stored in
// f.ints; null leaves a count unset, as encoding/json does.
func (f *fastBufs) usageBody() bool {
	r, u, ints := &f.rd, &f.usage, &f.ints
	r.BeginObject()
	*u = wireUsage{}
	for r.More() {
		k := r.Key()
		var dst **int64
		var i int
		switch string(k) {
		case "input_tokens":
			dst, i = &u.InputTokens, 0
		case "output_tokens":
			dst, i = &u.OutputTokens, 1
		case "cache_creation_input_tokens":
			dst, i = &u.CacheCreationInputTokens, 2
		case "cache_read_input_tokens":
			dst, i = &u.CacheReadInputTokens, 3
		default:
			if jsonr.FoldsTo(k, usageKeys...) {
				return false
			}
			r.Skip()
			continue
		}
		if *dst != nil || r.Peek() == '"' {
			return false // a duplicate, or a string encoding/json rejects
		}
		if r.Null() {
			continue
		}
		n, err := strconv.ParseInt(string(r.Number()), 10, 64)
		if err != nil {
			return false
		}
		ints[i] = n
		*dst = &ints[i]
	}
	return r.Err() == nil
}
