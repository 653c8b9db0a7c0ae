package openai

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"

	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/llm"
)

// ResponsesOptions describe the response a Responses client gets.
type ResponsesOptions struct {
	// ID is the response id ("resp_<hex>", see NewResponseID). Item ids
	// are derived from it, so a stream and its aggregate agree.
	ID string
	// Model is the model id the client requested.
	Model string
	// Created is the creation time in Unix seconds.
	Created int64
}

// NewResponseID returns "resp_" followed by 32 random hex digits.
func NewResponseID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "resp_" + hex.EncodeToString(b[:])
}

// ResponsesStream encodes canonical events as Responses SSE events,
// obeying what a strict OpenAI SDK checks: response.created and
// response.in_progress with output:[], per item added…done with dense
// output indices, content_part.added before any text delta,
// sequence_number 0, 1, … without gaps, only event types of the SDK union,
// exactly one terminal event whose output lists every finished item, and
// the flat error event followed by response.failed on failure.
// Consecutive text blocks share one message item.
type ResponsesStream struct {
	opts ResponsesOptions
	seq  int64
	base string // id suffix for derived item ids

	out      int    // output items started
	kind     uint8  // kind of the open item (kMessage, …)
	itemID   string // id of the open item
	parts    int    // content parts of the open message item
	partOpen bool   // a text part is open
	summary  bool   // the open reasoning item has a summary part
	args     bool   // the open call received argument text
	seen     int    // content blocks already turned into items
	// items holds the JSON of every output_item.done, comma-separated,
	// for the terminal snapshot, which must list them all.
	items []byte
	item  []byte // scratch for one item
	ended bool
}

const (
	kNone uint8 = iota
	kMessage
	kReasoning
	kCall
	kCustom
)

// NewResponsesStream returns an encoder for one response.
func NewResponsesStream(o ResponsesOptions) *ResponsesStream {
	return &ResponsesStream{opts: o, base: idBase(o.ID)}
}

func idBase(respID string) string {
	if len(respID) > 5 && respID[:5] == "resp_" {
		return respID[5:]
	}
	return sanitizeID(respID)
}

// event opens an SSE event of type typ: `event: typ\ndata: {"type":…,
// "sequence_number":n`. The caller appends fields and closes with end.
func (s *ResponsesStream) event(dst []byte, typ string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, typ...)
	dst = append(dst, `","sequence_number":`...)
	dst = strconv.AppendInt(dst, s.seq, 10)
	s.seq++
	return dst
}

func end(dst []byte) []byte { return append(dst, "}\n\n"...) }

// itemRef appends `,"item_id":…,"output_index":n`.
func (s *ResponsesStream) itemRef(dst []byte) []byte {
	dst = append(dst, `,"item_id":`...)
	dst = jsonw.Plain(dst, s.itemID)
	dst = append(dst, `,"output_index":`...)
	return strconv.AppendInt(dst, int64(s.out-1), 10)
}

// Append appends the SSE events for ev to dst.
func (s *ResponsesStream) Append(dst []byte, ev *llm.Event) []byte {
	if s.ended {
		return dst
	}
	switch ev.Type {
	case llm.EventStart:
		dst = s.event(dst, "response.created")
		dst = append(dst, `,"response":`...)
		dst = s.appendResponse(dst, "in_progress", nil, nil)
		dst = end(dst)
		dst = s.event(dst, "response.in_progress")
		dst = append(dst, `,"response":`...)
		dst = s.appendResponse(dst, "in_progress", nil, nil)
		return end(dst)
	case llm.EventTextStart:
		dst = s.natives(dst, ev.Partial, ev.ContentIndex)
		if s.kind != kMessage {
			dst = s.closeItem(dst, ev.Partial)
			dst = s.openItem(dst, kMessage, "msg_", nil)
		}
		dst = s.event(dst, "response.content_part.added")
		dst = s.itemRef(dst)
		dst = append(dst, `,"content_index":`...)
		dst = strconv.AppendInt(dst, int64(s.parts), 10)
		dst = append(dst, `,"part":{"type":"output_text","text":"","annotations":[]}`...)
		s.parts++
		s.partOpen = true
		return end(dst)
	case llm.EventTextDelta:
		dst = s.event(dst, "response.output_text.delta")
		dst = s.itemRef(dst)
		dst = append(dst, `,"content_index":`...)
		dst = strconv.AppendInt(dst, int64(s.parts-1), 10)
		dst = append(dst, `,"delta":`...)
		dst = jsonw.Plain(dst, ev.Delta)
		dst = append(dst, `,"logprobs":[]`...)
		return end(dst)
	case llm.EventTextEnd:
		return s.textDone(dst, ev.Content)
	case llm.EventThinkingStart:
		dst = s.natives(dst, ev.Partial, ev.ContentIndex)
		dst = s.closeItem(dst, ev.Partial)
		return s.openItem(dst, kReasoning, "rs_", ev.Block())
	case llm.EventThinkingDelta:
		if !s.summary {
			s.summary = true
			dst = s.event(dst, "response.reasoning_summary_part.added")
			dst = s.itemRef(dst)
			dst = append(dst, `,"summary_index":0,"part":{"type":"summary_text","text":""}`...)
			dst = end(dst)
		}
		dst = s.event(dst, "response.reasoning_summary_text.delta")
		dst = s.itemRef(dst)
		dst = append(dst, `,"summary_index":0,"delta":`...)
		dst = jsonw.Plain(dst, ev.Delta)
		return end(dst)
	case llm.EventThinkingEnd:
		return s.closeItem(dst, ev.Partial)
	case llm.EventToolCallStart:
		dst = s.natives(dst, ev.Partial, ev.ContentIndex)
		dst = s.closeItem(dst, ev.Partial)
		blk := ev.Block()
		if blk != nil && blk.CustomWireName() != "" {
			return s.openItem(dst, kCustom, "ctc_", blk)
		}
		return s.openItem(dst, kCall, "fc_", blk)
	case llm.EventToolCallDelta:
		if ev.Delta == "" {
			return dst
		}
		s.args = true
		return s.argsDelta(dst, ev.Delta)
	case llm.EventToolCallEnd:
		if !s.args {
			dst = s.argsDelta(dst, "{}") // never an empty argument string
		}
		return s.closeItem(dst, ev.Partial)
	case llm.EventDone:
		s.ended = true
		dst = s.natives(dst, ev.Partial, len(ev.Partial.Content))
		dst = s.closeItem(dst, ev.Partial)
		if ev.Reason == llm.StopLength {
			return s.terminal(dst, "response.incomplete", "incomplete", ev.Partial, "max_output_tokens", nil)
		}
		return s.terminal(dst, "response.completed", "completed", ev.Partial, "", nil)
	case llm.EventError:
		s.ended = true
		if ev.Reason == llm.StopAborted && (ev.Partial == nil || !ev.Partial.Stop.Safety) {
			return dst // the client is gone
		}
		dst = s.closeOpen(dst, ev.Partial)
		if ev.Partial != nil && ev.Partial.Stop.Safety {
			return s.terminal(dst, "response.incomplete", "incomplete", ev.Partial, "content_filter", nil)
		}
		f := describeFailure(ev)
		_, code := errorTypeCode(f.status, f.usageLimit)
		if f.code != "" {
			code = f.code
		}
		if code == "" {
			code = "server_error"
		}
		dst = s.event(dst, "error")
		dst = append(dst, `,"code":`...)
		dst = jsonw.Plain(dst, code)
		dst = append(dst, `,"message":`...)
		dst = jsonw.Plain(dst, f.message)
		dst = append(dst, `,"param":null`...)
		dst = end(dst)
		return s.terminal(dst, "response.failed", "failed", ev.Partial, "", &f)
	}
	return dst
}

func (s *ResponsesStream) argsDelta(dst []byte, delta string) []byte {
	typ := "response.function_call_arguments.delta"
	if s.kind == kCustom {
		typ = "response.custom_tool_call_input.delta"
	}
	dst = s.event(dst, typ)
	dst = s.itemRef(dst)
	dst = append(dst, `,"delta":`...)
	dst = jsonw.Plain(dst, delta)
	return end(dst)
}

func (s *ResponsesStream) textDone(dst []byte, text string) []byte {
	s.partOpen = false
	dst = s.event(dst, "response.output_text.done")
	dst = s.itemRef(dst)
	dst = append(dst, `,"content_index":`...)
	dst = strconv.AppendInt(dst, int64(s.parts-1), 10)
	dst = append(dst, `,"text":`...)
	dst = jsonw.Plain(dst, text)
	dst = append(dst, `,"logprobs":[]`...)
	dst = end(dst)
	dst = s.event(dst, "response.content_part.done")
	dst = s.itemRef(dst)
	dst = append(dst, `,"content_index":`...)
	dst = strconv.AppendInt(dst, int64(s.parts-1), 10)
	dst = append(dst, `,"part":{"type":"output_text","text":`...)
	dst = jsonw.Plain(dst, text)
	dst = append(dst, `,"annotations":[]}`...)
	return end(dst)
}

// openItem starts output item kind for block blk (nil for a message).
func (s *ResponsesStream) openItem(dst []byte, kind uint8, prefix string, blk *llm.Content) []byte {
	s.kind, s.parts, s.summary, s.args = kind, 0, false, false
	s.itemID = s.derivedID(prefix, s.out)
	if blk != nil && blk.ItemID() != "" && len(blk.ItemID()) > 3 && blk.ItemID()[:len(prefix)-1] == prefix[:len(prefix)-1] {
		s.itemID = blk.ItemID()
	}
	s.out++
	dst = s.event(dst, "response.output_item.added")
	dst = append(dst, `,"output_index":`...)
	dst = strconv.AppendInt(dst, int64(s.out-1), 10)
	dst = append(dst, `,"item":`...)
	switch kind {
	case kMessage:
		dst = append(dst, `{"id":`...)
		dst = jsonw.Plain(dst, s.itemID)
		dst = append(dst, `,"type":"message","status":"in_progress","role":"assistant","content":[]}`...)
	case kReasoning:
		dst = append(dst, `{"id":`...)
		dst = jsonw.Plain(dst, s.itemID)
		dst = append(dst, `,"type":"reasoning","summary":[]}`...)
	default:
		dst = appendCallItem(dst, blk, s.itemID, s.callID(blk, s.out-1), "in_progress", false)
	}
	return end(dst)
}

func (s *ResponsesStream) derivedID(prefix string, n int) string {
	return prefix + s.base + "_" + strconv.Itoa(n)
}

func (s *ResponsesStream) callID(blk *llm.Content, n int) string {
	if blk != nil && blk.ID != "" {
		return splitCallID(blk.ID)
	}
	return s.derivedID("call_", n)
}

// closeOpen closes the open item after a failure, ending a text part
// that is still open (blocks may stay open before an error).
func (s *ResponsesStream) closeOpen(dst []byte, m *llm.Message) []byte {
	if s.kind == kMessage && s.partOpen && m != nil && len(m.Content) > 0 {
		dst = s.textDone(dst, m.Content[len(m.Content)-1].Text)
	}
	return s.closeItem(dst, m)
}

// closeItem emits output_item.done for the open item, built from the
// message's blocks, and records it for the terminal snapshot.
func (s *ResponsesStream) closeItem(dst []byte, m *llm.Message) []byte {
	if s.kind == kNone || m == nil {
		return dst
	}
	kind := s.kind
	s.kind = kNone
	first := s.seen
	last := first
	// The item covers the blocks from s.seen: a run of text blocks for a
	// message, else exactly one block.
	switch kind {
	case kMessage:
		for last < len(m.Content) && (m.Content[last].Type == llm.ContentText || m.Content[last].Type == llm.ContentImage) {
			last++
		}
	default:
		for first < len(m.Content) && m.Content[first].Type != blockTypeFor(kind) {
			first++
		}
		last = min(first+1, len(m.Content))
	}
	s.seen = last
	s.item = s.item[:0]
	switch kind {
	case kMessage:
		s.item = appendMessageItem(s.item, m.Content[first:last], s.itemID)
	case kReasoning:
		if first < last {
			s.item = appendReasoningItem(s.item, &m.Content[first], m.API, s.itemID)
		}
	default:
		if first < last {
			s.item = appendCallItem(s.item, &m.Content[first], s.itemID, s.callID(&m.Content[first], s.out-1), "completed", true)
		}
	}
	if len(s.item) == 0 {
		return dst
	}
	if kind == kCall || kind == kCustom {
		c := &m.Content[first]
		typ := "response.function_call_arguments.done"
		field := `,"arguments":`
		if kind == kCustom {
			typ, field = "response.custom_tool_call_input.done", `,"input":`
		}
		dst = s.event(dst, typ)
		dst = s.itemRef(dst)
		dst = append(dst, field...)
		dst = jsonw.Plain(dst, argumentsText(c))
		if kind == kCall {
			dst = jsonw.PlainField(dst, "name", c.Name)
		}
		dst = end(dst)
	}
	if kind == kReasoning && s.summary {
		text := m.Content[first].Thinking
		dst = s.event(dst, "response.reasoning_summary_text.done")
		dst = s.itemRef(dst)
		dst = append(dst, `,"summary_index":0,"text":`...)
		dst = jsonw.Plain(dst, text)
		dst = end(dst)
		dst = s.event(dst, "response.reasoning_summary_part.done")
		dst = s.itemRef(dst)
		dst = append(dst, `,"summary_index":0,"part":{"type":"summary_text","text":`...)
		dst = jsonw.Plain(dst, text)
		dst = append(dst, '}')
		dst = end(dst)
	}
	return s.itemDone(dst)
}

func (s *ResponsesStream) itemDone(dst []byte) []byte {
	dst = s.event(dst, "response.output_item.done")
	dst = append(dst, `,"output_index":`...)
	dst = strconv.AppendInt(dst, int64(s.out-1), 10)
	dst = append(dst, `,"item":`...)
	dst = append(dst, s.item...)
	dst = end(dst)
	s.items = jsonw.Comma(s.items)
	s.items = append(s.items, s.item...)
	return dst
}

func blockTypeFor(kind uint8) llm.ContentType {
	switch kind {
	case kReasoning:
		return llm.ContentThinking
	case kCall, kCustom:
		return llm.ContentToolCall
	}
	return llm.ContentText
}

// natives emits Responses-native blocks (hosted tool items) found before
// content index upTo as complete items. Any other block without events
// (redacted thinking, foreign natives) is skipped; a non-text block ends
// the open message item.
func (s *ResponsesStream) natives(dst []byte, m *llm.Message, upTo int) []byte {
	if m == nil || s.kind != kNone && s.kind != kMessage {
		return dst
	}
	for i := s.seen; i < upTo && i < len(m.Content); i++ {
		c := &m.Content[i]
		switch c.Type {
		case llm.ContentText, llm.ContentImage:
			if s.kind == kMessage {
				continue
			}
			return dst
		case llm.ContentThinking, llm.ContentToolCall:
			return dst
		}
		if s.kind == kMessage {
			dst = s.closeItem(dst, m)
		}
		if c.Type == llm.ContentNative && c.NativeAPI() == llm.APIOpenAIResponses && len(c.Raw()) > 0 {
			s.out++
			s.item = append(s.item[:0], c.Raw()...)
			dst = s.event(dst, "response.output_item.added")
			dst = append(dst, `,"output_index":`...)
			dst = strconv.AppendInt(dst, int64(s.out-1), 10)
			dst = append(dst, `,"item":`...)
			dst = append(dst, c.Raw()...)
			dst = end(dst)
			dst = s.itemDone(dst)
		}
		s.seen = i + 1
	}
	return dst
}

// terminal emits the one terminal event with the full snapshot.
func (s *ResponsesStream) terminal(dst []byte, typ, status string, m *llm.Message, incomplete string, f *failure) []byte {
	dst = s.event(dst, typ)
	dst = append(dst, `,"response":`...)
	s.item = append(s.item[:0], '[')
	s.item = append(s.item, s.items...)
	s.item = append(s.item, ']')
	dst = s.appendResponseFull(dst, status, s.item, m, incomplete, f)
	return end(dst)
}

func (s *ResponsesStream) appendResponse(dst []byte, status string, output []byte, m *llm.Message) []byte {
	return s.appendResponseFull(dst, status, output, m, "", nil)
}

func (s *ResponsesStream) appendResponseFull(dst []byte, status string, output []byte, m *llm.Message, incomplete string, f *failure) []byte {
	return appendResponseObject(dst, s.opts, status, output, m, incomplete, f)
}
