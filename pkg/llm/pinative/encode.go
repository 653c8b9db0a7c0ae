package pinative

import (
	"strconv"

	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/llm"
)

// AppendEvent appends the pi-native JSON of ev: block events carry
// contentIndex and the partial message, deltas their delta, text_end /
// thinking_end the full content, toolcall_end the finished toolCall, done the
// final message and error the failed message. It allocates nothing once dst
// has grown.
func AppendEvent(dst []byte, ev *llm.Event) []byte {
	dst = append(dst, `{"type":`...)
	dst = jsonw.Plain(dst, ev.Type.String())
	switch ev.Type {
	case llm.EventDone:
		dst = append(dst, `,"reason":`...)
		dst = jsonw.Plain(dst, string(ev.Reason))
		dst = append(dst, `,"message":`...)
		dst = appendMessageOrEmpty(dst, ev.Partial)
		return append(dst, '}')
	case llm.EventError:
		dst = append(dst, `,"reason":`...)
		reason := ev.Reason
		if reason == "" {
			reason = llm.StopError
		}
		dst = jsonw.Plain(dst, string(reason))
		dst = append(dst, `,"error":`...)
		dst = appendMessageOrEmpty(dst, ev.Partial)
		return append(dst, '}')
	case llm.EventStart:
	default:
		dst = append(dst, `,"contentIndex":`...)
		dst = strconv.AppendInt(dst, int64(ev.ContentIndex), 10)
		switch ev.Type {
		case llm.EventTextDelta, llm.EventThinkingDelta, llm.EventToolCallDelta:
			dst = append(dst, `,"delta":`...)
			dst = jsonw.Plain(dst, ev.Delta)
		case llm.EventTextEnd, llm.EventThinkingEnd:
			dst = append(dst, `,"content":`...)
			dst = jsonw.Plain(dst, ev.Content)
		case llm.EventToolCallEnd:
			if b := ev.Block(); b != nil {
				dst = append(dst, `,"toolCall":`...)
				dst = AppendContent(dst, b)
			}
		}
	}
	dst = append(dst, `,"partial":`...)
	dst = appendMessageOrEmpty(dst, ev.Partial)
	return append(dst, '}')
}

func appendMessageOrEmpty(dst []byte, m *llm.Message) []byte {
	if m == nil {
		return AppendMessage(dst, &llm.Message{Role: llm.RoleAssistant})
	}
	return AppendMessage(dst, m)
}

// AppendMessage appends the pi-native JSON of a message. Assistant
// messages carry api, provider, model, usage, stopReason ("stop" while
// still streaming) and timestamp; tool results toolCallId, toolName and
// isError.
func AppendMessage(dst []byte, m *llm.Message) []byte {
	dst = append(dst, `{"role":`...)
	dst = jsonw.Plain(dst, string(m.Role))
	dst = append(dst, `,"content":[`...)
	for i := range m.Content {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendContent(dst, &m.Content[i])
	}
	dst = append(dst, ']')
	switch m.Role {
	case llm.RoleToolResult:
		dst = append(dst, `,"toolCallId":`...)
		dst = jsonw.Plain(dst, m.ToolCallID)
		dst = append(dst, `,"toolName":`...)
		dst = jsonw.Plain(dst, m.ToolName)
		dst = append(dst, `,"isError":`...)
		dst = strconv.AppendBool(dst, m.IsError)
	case llm.RoleAssistant:
		dst = append(dst, `,"api":`...)
		dst = jsonw.Plain(dst, m.API)
		dst = append(dst, `,"provider":`...)
		dst = jsonw.Plain(dst, m.Provider)
		dst = append(dst, `,"model":`...)
		dst = jsonw.Plain(dst, m.Model)
		if m.ResponseID != "" {
			dst = append(dst, `,"responseId":`...)
			dst = jsonw.Plain(dst, m.ResponseID)
		}
		dst = append(dst, `,"usage":`...)
		dst = appendUsage(dst, &m.Usage)
		stop := m.StopReason
		if stop == "" {
			stop = llm.StopEnd
		}
		dst = append(dst, `,"stopReason":`...)
		dst = jsonw.Plain(dst, string(stop))
		if m.ErrorMessage != "" || stop == llm.StopError || stop == llm.StopAborted {
			dst = append(dst, `,"errorMessage":`...)
			dst = jsonw.Plain(dst, m.ErrorMessage)
		}
		if m.ErrorStatus != 0 {
			dst = append(dst, `,"errorStatus":`...)
			dst = strconv.AppendInt(dst, int64(m.ErrorStatus), 10)
		}
	}
	dst = append(dst, `,"timestamp":`...)
	dst = strconv.AppendInt(dst, m.Timestamp, 10)
	return append(dst, '}')
}

func appendUsage(dst []byte, u *llm.Usage) []byte {
	dst = append(dst, `{"input":`...)
	dst = strconv.AppendInt(dst, u.Input, 10)
	dst = append(dst, `,"output":`...)
	dst = strconv.AppendInt(dst, u.Output, 10)
	dst = append(dst, `,"cacheRead":`...)
	dst = strconv.AppendInt(dst, u.CacheRead, 10)
	dst = append(dst, `,"cacheWrite":`...)
	dst = strconv.AppendInt(dst, u.CacheWrite, 10)
	dst = append(dst, `,"totalTokens":`...)
	dst = strconv.AppendInt(dst, u.Total(), 10)
	if u.Reasoning > 0 {
		dst = append(dst, `,"reasoningTokens":`...)
		dst = strconv.AppendInt(dst, u.Reasoning, 10)
	}
	dst = append(dst, `,"cost":{"input":`...)
	dst = jsonw.Number(dst, u.Cost.Input)
	dst = append(dst, `,"output":`...)
	dst = jsonw.Number(dst, u.Cost.Output)
	dst = append(dst, `,"cacheRead":`...)
	dst = jsonw.Number(dst, u.Cost.CacheRead)
	dst = append(dst, `,"cacheWrite":`...)
	dst = jsonw.Number(dst, u.Cost.CacheWrite)
	dst = append(dst, `,"total":`...)
	dst = jsonw.Number(dst, u.Cost.Total)
	return append(dst, `}}`...)
}

// AppendContent appends the pi-native JSON of a content block, the shape
// of llm.Content.MarshalJSON. An open tool call's arguments are the
// tolerant parse of the text streamed so far.
func AppendContent(dst []byte, c *llm.Content) []byte {
	dst = append(dst, `{"type":`...)
	dst = jsonw.Plain(dst, string(c.Type))
	opt := func(dst []byte, key, v string) []byte {
		if v == "" {
			return dst
		}
		dst = append(dst, ',', '"')
		dst = append(dst, key...)
		dst = append(dst, '"', ':')
		return jsonw.Plain(dst, v)
	}
	switch c.Type {
	case llm.ContentText:
		dst = append(dst, `,"text":`...)
		dst = jsonw.Plain(dst, c.Text)
		dst = opt(dst, "textSignature", c.TextSignature())
	case llm.ContentThinking:
		dst = append(dst, `,"thinking":`...)
		dst = jsonw.Plain(dst, c.Thinking)
		dst = opt(dst, "thinkingSignature", c.ThinkingSignature)
		dst = opt(dst, "itemId", c.ItemID())
	case llm.ContentRedactedThinking:
		dst = append(dst, `,"data":`...)
		dst = jsonw.Plain(dst, c.Data)
	case llm.ContentImage:
		if c.Data != "" || c.URL() == "" {
			dst = append(dst, `,"data":`...)
			dst = jsonw.Plain(dst, c.Data)
		}
		dst = opt(dst, "mimeType", c.MimeType)
		dst = opt(dst, "url", c.URL())
		dst = opt(dst, "detail", c.Detail())
	case llm.ContentToolCall:
		dst = append(dst, `,"id":`...)
		dst = jsonw.Plain(dst, c.ID)
		dst = append(dst, `,"name":`...)
		dst = jsonw.Plain(dst, c.Name)
		dst = append(dst, `,"arguments":`...)
		dst = appendArguments(dst, c)
		dst = opt(dst, "thoughtSignature", c.ThoughtSignature())
		dst = opt(dst, "customWireName", c.CustomWireName())
	case llm.ContentNative:
		if len(c.Raw()) > 0 {
			dst = append(dst, `,"raw":`...)
			dst = jsonw.Compact(dst, c.Raw(), "null")
		}
		dst = opt(dst, "api", c.NativeAPI())
	}
	return append(dst, '}')
}

func appendArguments(dst []byte, c *llm.Content) []byte {
	if c.Arguments != nil {
		return jsonw.Compact(dst, c.Arguments, "{}")
	}
	if t := c.ArgumentsText; len(t) > 0 && t[0] == '{' {
		if out := jsonw.CompactString(dst, t, ""); len(out) > len(dst) {
			return out // valid JSON text, kept as the model wrote it
		}
	}
	return jsonw.Compact(dst, llm.ParsePartialJSON(c.ArgumentsText), "{}")
}
