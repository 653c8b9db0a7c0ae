package openai

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"

	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/llm"
)

// ChatOptions describe the response a Chat client gets.
type ChatOptions struct {
	// ID is the completion id ("chatcmpl-…", see NewChatID).
	ID string
	// Model is the model id the client requested.
	Model string
	// Created is the creation time in Unix seconds.
	Created int64
	// IncludeUsage mirrors stream_options.include_usage: every chunk
	// carries "usage":null and one trailing chunk carries the usage.
	IncludeUsage bool
	// OmitReasoning drops thinking text instead of sending it as the
	// de-facto reasoning_content extension.
	OmitReasoning bool
}

// NewChatID returns "chatcmpl-" followed by a random UUID.
func NewChatID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return "chatcmpl-" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// ChatStream encodes canonical events as chat.completion.chunk SSE
// frames, obeying what a strict OpenAI SDK checks: constant id/created/model, the
// role in the first delta, a tool call's id, type and name only in its
// first fragment with its own index, one finish chunk, usage once in a
// trailing choices:[] chunk, no top-level error key on normal chunks,
// "data: [DONE]" after success, and a {"error":…} frame (no [DONE]) after
// a failure. A ChatStream is used by one goroutine; it does not allocate
// per event once its frame buffer has grown.
type ChatStream struct {
	opts   ChatOptions
	prefix []byte // `data: {"id":…,"choices":[{"index":0,"delta":`
	tail   []byte // after the delta of a regular chunk

	tools    int // tool calls started so far
	tool     int // index of the open tool call
	sentID   bool
	sentName bool
	sentArgs bool
	ended    bool
}

// NewChatStream returns an encoder for one response.
func NewChatStream(o ChatOptions) *ChatStream {
	s := &ChatStream{opts: o}
	s.prefix = s.appendHead(nil)
	s.prefix = append(s.prefix, `"choices":[{"index":0,"delta":`...)
	s.tail = []byte(`,"logprobs":null,"finish_reason":null}]`)
	if o.IncludeUsage {
		s.tail = append(s.tail, `,"usage":null`...)
	}
	s.tail = append(s.tail, "}\n\n"...)
	return s
}

// appendHead writes `data: {"id":…,"system_fingerprint":null,`.
func (s *ChatStream) appendHead(dst []byte) []byte {
	dst = append(dst, `data: {"id":`...)
	dst = jsonw.Plain(dst, s.opts.ID)
	dst = append(dst, `,"object":"chat.completion.chunk","created":`...)
	dst = strconv.AppendInt(dst, s.opts.Created, 10)
	dst = append(dst, `,"model":`...)
	dst = jsonw.Plain(dst, s.opts.Model)
	return append(dst, `,"system_fingerprint":null,`...)
}

// Append appends the frames for ev to dst. Events without a Chat form
// (block starts and ends, …) append nothing; nothing is appended after
// the terminal event.
func (s *ChatStream) Append(dst []byte, ev *llm.Event) []byte {
	if s.ended {
		return dst
	}
	switch ev.Type {
	case llm.EventStart:
		dst = append(dst, s.prefix...)
		dst = append(dst, `{"role":"assistant","content":""}`...)
		return append(dst, s.tail...)
	case llm.EventTextDelta:
		dst = append(dst, s.prefix...)
		dst = append(dst, `{"content":`...)
		dst = jsonw.Plain(dst, ev.Delta)
		return append(append(dst, '}'), s.tail...)
	case llm.EventThinkingDelta:
		if s.opts.OmitReasoning {
			return dst
		}
		dst = append(dst, s.prefix...)
		dst = append(dst, `{"reasoning_content":`...)
		dst = jsonw.Plain(dst, ev.Delta)
		return append(append(dst, '}'), s.tail...)
	case llm.EventToolCallStart:
		blk := ev.Block()
		s.tool, s.tools = s.tools, s.tools+1
		s.sentID, s.sentName, s.sentArgs = false, false, false
		var id, name string
		if blk != nil {
			id, name = splitCallID(blk.ID), blk.Name
		}
		s.sentID, s.sentName = id != "", name != ""
		dst = s.toolHead(dst)
		dst = append(dst, `,"id":`...)
		dst = jsonw.Plain(dst, id)
		dst = append(dst, `,"type":"function","function":{"name":`...)
		dst = jsonw.Plain(dst, name)
		dst = append(dst, `,"arguments":""}}]}`...)
		return append(dst, s.tail...)
	case llm.EventToolCallDelta:
		if ev.Delta == "" {
			return dst
		}
		s.sentArgs = true
		return s.toolArgs(dst, ev.Delta)
	case llm.EventToolCallEnd:
		return s.toolEnd(dst, ev.Block())
	case llm.EventDone:
		s.ended = true
		return s.finish(dst, ev.Partial, chatFinishReason(ev.Partial, ev.Reason))
	case llm.EventError:
		s.ended = true
		if ev.Partial != nil && ev.Partial.Stop.Safety {
			return s.finish(dst, ev.Partial, "content_filter")
		}
		if ev.Reason == llm.StopAborted {
			return dst // the client is gone
		}
		f := describeFailure(ev)
		typ, code := errorTypeCode(f.status, f.usageLimit)
		if f.code != "" {
			code = f.code
		}
		dst = append(dst, `data: {"error":`...)
		dst = appendErrorObject(dst, f.message, typ, code)
		return append(dst, "}\n\n"...)
	}
	return dst
}

func (s *ChatStream) toolHead(dst []byte) []byte {
	dst = append(dst, s.prefix...)
	dst = append(dst, `{"tool_calls":[{"index":`...)
	return strconv.AppendInt(dst, int64(s.tool), 10)
}

func (s *ChatStream) toolArgs(dst []byte, args string) []byte {
	dst = s.toolHead(dst)
	dst = append(dst, `,"function":{"arguments":`...)
	dst = jsonw.Plain(dst, args)
	dst = append(dst, "}}]}"...)
	return append(dst, s.tail...)
}

// toolEnd sends what the first fragment could not: a late id or name
// ("" + value concatenates correctly) and "{}" for a call without
// argument text.
func (s *ChatStream) toolEnd(dst []byte, blk *llm.Content) []byte {
	if blk == nil {
		return dst
	}
	if !s.sentID && blk.ID != "" {
		dst = s.toolHead(dst)
		dst = append(dst, `,"id":`...)
		dst = jsonw.Plain(dst, splitCallID(blk.ID))
		dst = append(dst, "}]}"...)
		dst = append(dst, s.tail...)
	}
	if !s.sentName && blk.Name != "" {
		dst = s.toolHead(dst)
		dst = append(dst, `,"function":{"name":`...)
		dst = jsonw.Plain(dst, blk.Name)
		dst = append(dst, "}}]}"...)
		dst = append(dst, s.tail...)
	}
	if !s.sentArgs {
		dst = s.toolArgs(dst, "{}")
	}
	return dst
}

func (s *ChatStream) finish(dst []byte, m *llm.Message, reason string) []byte {
	dst = append(dst, s.prefix...)
	dst = append(dst, `{},"logprobs":null,"finish_reason":"`...)
	dst = append(dst, reason...)
	dst = append(dst, `"}]`...)
	if s.opts.IncludeUsage {
		dst = append(dst, `,"usage":null`...)
	}
	dst = append(dst, "}\n\n"...)
	if s.opts.IncludeUsage && m != nil {
		dst = s.appendHead(dst)
		dst = append(dst, `"choices":[],"usage":`...)
		dst = appendChatUsage(dst, m.Usage)
		dst = append(dst, "}\n\n"...)
	}
	return append(dst, "data: [DONE]\n\n"...)
}

// chatFinishReason maps a canonical end to a Chat finish_reason,
// passing Chat's own raw value through.
func chatFinishReason(m *llm.Message, reason llm.StopReason) string {
	if m != nil && m.Stop.Safety {
		return "content_filter"
	}
	switch reason {
	case llm.StopLength:
		return "length"
	case llm.StopToolUse:
		return "tool_calls"
	case llm.StopError, llm.StopAborted:
		return "stop"
	}
	if m != nil && m.HasToolCall() {
		return "tool_calls"
	}
	return "stop"
}

func appendChatUsage(dst []byte, u llm.Usage) []byte {
	p := u.PromptTotal()
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, p, 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, u.Output, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, p+u.Output, 10)
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, u.CacheRead, 10)
	dst = append(dst, '}')
	if u.Reasoning > 0 {
		dst = append(dst, `,"completion_tokens_details":{"reasoning_tokens":`...)
		dst = strconv.AppendInt(dst, u.Reasoning, 10)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// AppendChatCompletion appends the non-streaming chat.completion body for
// a final message. A safety-class error is a
// normal completion with finish_reason content_filter; for any other
// error the caller answers with AppendErrorBody instead.
func AppendChatCompletion(dst []byte, m *llm.Message, o ChatOptions) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonw.Plain(dst, o.ID)
	dst = append(dst, `,"object":"chat.completion","created":`...)
	dst = strconv.AppendInt(dst, o.Created, 10)
	dst = append(dst, `,"model":`...)
	dst = jsonw.Plain(dst, o.Model)
	dst = append(dst, `,"system_fingerprint":null,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	text, thinking, calls := 0, 0, 0
	for i := range m.Content {
		switch m.Content[i].Type {
		case llm.ContentText:
			text++
		case llm.ContentThinking:
			thinking++
		case llm.ContentToolCall:
			calls++
		}
	}
	if text == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = jsonw.Plain(dst, m.TextContent())
	}
	dst = append(dst, `,"refusal":null`...)
	if thinking > 0 && !o.OmitReasoning {
		dst = append(dst, `,"reasoning_content":"`...)
		for i := range m.Content {
			if m.Content[i].Type == llm.ContentThinking {
				dst = jsonw.PlainBody(dst, m.Content[i].Thinking)
			}
		}
		dst = append(dst, '"')
	}
	if calls > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		for i := range m.Content {
			c := &m.Content[i]
			if c.Type != llm.ContentToolCall {
				continue
			}
			dst = jsonw.Comma(dst)
			dst = append(dst, `{"id":`...)
			dst = jsonw.Plain(dst, splitCallID(c.ID))
			dst = append(dst, `,"type":"function","function":{"name":`...)
			dst = jsonw.Plain(dst, c.Name)
			dst = append(dst, `,"arguments":`...)
			dst = jsonw.Plain(dst, argumentsText(c))
			dst = append(dst, "}}"...)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"annotations":[]},"logprobs":null,"finish_reason":"`...)
	dst = append(dst, chatFinishReason(m, m.StopReason)...)
	dst = append(dst, `"}],"usage":`...)
	dst = appendChatUsage(dst, m.Usage)
	return append(dst, '}')
}
