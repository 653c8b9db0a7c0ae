package openai

import (
	"strconv"

	"github.com/ompgo/omp/internal/jsonr"
	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/llm"
)

// appendResponseObject writes a Responses response object.
func appendResponseObject(dst []byte, o ResponsesOptions, status string, output []byte, m *llm.Message, incomplete string, f *failure) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonw.Plain(dst, o.ID)
	dst = append(dst, `,"object":"response","created_at":`...)
	dst = strconv.AppendInt(dst, o.Created, 10)
	dst = append(dst, `,"status":"`...)
	dst = append(dst, status...)
	dst = append(dst, `","error":`...)
	if f != nil {
		_, code := errorTypeCode(f.status, f.usageLimit)
		if f.code != "" {
			code = f.code
		}
		if code == "" {
			code = "server_error"
		}
		dst = append(dst, `{"code":`...)
		dst = jsonw.Plain(dst, code)
		dst = append(dst, `,"message":`...)
		dst = jsonw.Plain(dst, f.message)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"incomplete_details":`...)
	if incomplete != "" {
		dst = append(dst, `{"reason":"`...)
		dst = append(dst, incomplete...)
		dst = append(dst, `"}`...)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"instructions":null,"model":`...)
	dst = jsonw.Plain(dst, o.Model)
	dst = append(dst, `,"output":`...)
	if len(output) == 0 {
		dst = append(dst, "[]"...)
	} else {
		dst = append(dst, output...)
	}
	dst = append(dst, `,"parallel_tool_calls":true,"tool_choice":"auto","tools":[],"store":false,"usage":`...)
	if m == nil || status == "in_progress" {
		dst = append(dst, "null"...)
	} else {
		dst = appendResponsesUsage(dst, m.Usage)
	}
	return append(dst, '}')
}

func appendResponsesUsage(dst []byte, u llm.Usage) []byte {
	in := u.PromptTotal()
	dst = append(dst, `{"input_tokens":`...)
	dst = strconv.AppendInt(dst, in, 10)
	dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, u.CacheRead, 10)
	dst = append(dst, `},"output_tokens":`...)
	dst = strconv.AppendInt(dst, u.Output, 10)
	dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":`...)
	dst = strconv.AppendInt(dst, u.Reasoning, 10)
	dst = append(dst, `},"total_tokens":`...)
	dst = strconv.AppendInt(dst, in+u.Output, 10)
	return append(dst, '}')
}

// appendMessageItem writes a completed message item for a run of text
// blocks (images are dropped).
func appendMessageItem(dst []byte, blocks []llm.Content, id string) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonw.Plain(dst, id)
	dst = append(dst, `,"type":"message","status":"completed","role":"assistant","content":[`...)
	for i := range blocks {
		if blocks[i].Type != llm.ContentText {
			continue
		}
		dst = jsonw.Comma(dst)
		dst = append(dst, `{"type":"output_text","text":`...)
		dst = jsonw.Plain(dst, blocks[i].Text)
		dst = append(dst, `,"annotations":[]}`...)
	}
	return append(dst, "]}"...)
}

// appendReasoningItem writes a reasoning item. An OpenAI reasoning item
// kept as the signature gives its encrypted_content back; a foreign
// signature travels as a gateway token.
func appendReasoningItem(dst []byte, c *llm.Content, api, id string) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonw.Plain(dst, id)
	dst = append(dst, `,"type":"reasoning","summary":[`...)
	if c.Thinking != "" {
		dst = append(dst, `{"type":"summary_text","text":`...)
		dst = jsonw.Plain(dst, c.Thinking)
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	sig := c.ThinkingSignature
	switch {
	case sig == "":
	case sig[0] == '{' && isResponsesFamily(api):
		if enc := encryptedContent(sig); enc != "" {
			dst = jsonw.PlainField(dst, "encrypted_content", enc)
		}
	default:
		dst = jsonw.PlainField(dst, "encrypted_content", encodeSignatureToken(api, sig))
	}
	return append(dst, '}')
}

// encryptedContent reads encrypted_content from a reasoning item's JSON.
func encryptedContent(item string) string {
	d := jsonr.NewReader([]byte(item))
	out := ""
	for k := range d.Fields() {
		if string(k) == "encrypted_content" && d.Peek() == '"' {
			out = d.String()
		}
	}
	return out
}

// appendCallItem writes a function_call (or custom_tool_call) item.
func appendCallItem(dst []byte, c *llm.Content, id, callID, status string, final bool) []byte {
	custom := c != nil && c.CustomWireName() != ""
	name := ""
	if c != nil {
		name = c.Name
	}
	dst = append(dst, `{"id":`...)
	dst = jsonw.Plain(dst, id)
	if custom {
		dst = append(dst, `,"type":"custom_tool_call","status":"`...)
	} else {
		dst = append(dst, `,"type":"function_call","status":"`...)
	}
	dst = append(dst, status...)
	dst = append(dst, `","call_id":`...)
	dst = jsonw.Plain(dst, callID)
	dst = jsonw.PlainField(dst, "name", name)
	args := ""
	if final {
		args = argumentsText(c)
	}
	if custom {
		dst = jsonw.PlainField(dst, "input", args)
	} else {
		dst = jsonw.PlainField(dst, "arguments", args)
	}
	return append(dst, '}')
}

// AppendResponse appends the non-streaming Responses body for a final
// message. Item ids are the ones a ResponsesStream
// with the same options produces. A length stop is status incomplete
// (max_output_tokens) and a safety-class error incomplete
// (content_filter); for any other error the caller answers with
// AppendErrorBody instead.
func AppendResponse(dst []byte, m *llm.Message, o ResponsesOptions) []byte {
	s := NewResponsesStream(o)
	var ev llm.Event
	ev.Partial = m
	// Replay the message through the stream encoder's item logic, keeping
	// only the items, so both modes agree.
	scratch := make([]byte, 0, 256)
	for i := range m.Content {
		c := &m.Content[i]
		ev.ContentIndex = i
		switch c.Type {
		case llm.ContentText:
			ev.Type = llm.EventTextStart
			scratch = s.Append(scratch[:0], &ev)
			ev.Type, ev.Content = llm.EventTextEnd, c.Text
			scratch = s.Append(scratch[:0], &ev)
		case llm.ContentThinking:
			ev.Type = llm.EventThinkingStart
			scratch = s.Append(scratch[:0], &ev)
			if c.Thinking != "" {
				ev.Type, ev.Delta = llm.EventThinkingDelta, c.Thinking
				scratch = s.Append(scratch[:0], &ev)
			}
			ev.Type = llm.EventThinkingEnd
			scratch = s.Append(scratch[:0], &ev)
		case llm.ContentToolCall:
			ev.Type = llm.EventToolCallStart
			scratch = s.Append(scratch[:0], &ev)
			s.args = true
			ev.Type = llm.EventToolCallEnd
			scratch = s.Append(scratch[:0], &ev)
		}
	}
	scratch = s.natives(scratch[:0], m, len(m.Content))
	_ = s.closeItem(scratch, m)
	status, incomplete := "completed", ""
	switch {
	case m.Stop.Safety:
		status, incomplete = "incomplete", "content_filter"
	case m.StopReason == llm.StopLength:
		status, incomplete = "incomplete", "max_output_tokens"
	case m.StopReason == llm.StopError || m.StopReason == llm.StopAborted:
		status = "failed"
	}
	out := make([]byte, 0, len(s.items)+2)
	out = append(append(append(out, '['), s.items...), ']')
	var f *failure
	if status == "failed" {
		f = &failure{message: m.ErrorMessage, status: 502}
	}
	return appendResponseObject(dst, o, status, out, m, incomplete, f)
}
