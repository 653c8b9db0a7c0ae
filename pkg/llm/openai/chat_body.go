package openai

import (
	"encoding/json"
	"slices"

	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/llm"
)

// AppendChatBody appends the Chat Completions request body for req sent to
// model. The body always streams and asks for
// usage (unless compat forbids it); Extra fields are forwarded only when
// the request came from a Chat client.
func AppendChatBody(dst []byte, req *llm.Request, model llm.Model, compat ChatCompat) []byte {
	dst = append(dst, '{')
	dst = jsonw.PlainField(dst, "model", model.WireID())
	dst = jsonw.Key(dst, "messages")
	dst = append(dst, '[')
	dst = appendChatSystem(dst, req, model, compat)
	msgs := req.Messages
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case llm.RoleUser, llm.RoleDeveloper:
			if i > 0 && compat.AssistantAfterToolResult && msgs[i-1].Role == llm.RoleToolResult {
				dst = jsonw.Comma(dst)
				dst = append(dst, `{"role":"assistant","content":"I have processed the tool results."}`...)
			}
			role := "user"
			if m.Role == llm.RoleDeveloper {
				role = "system"
				if compat.DeveloperRole {
					role = "developer"
				}
			}
			dst = appendChatUser(dst, role, m.Content)
		case llm.RoleAssistant:
			dst = appendChatAssistant(dst, m, compat)
		case llm.RoleToolResult:
			dst = appendChatToolResult(dst, m, compat)
			// Chat tool messages are text-only: images follow in a user
			// message after the last consecutive tool result.
			if i+1 == len(msgs) || msgs[i+1].Role != llm.RoleToolResult {
				dst = appendToolImages(dst, msgs, i)
			}
		}
	}
	dst = append(dst, ']')
	dst = appendChatTools(dst, req, compat)
	dst = appendChatOptions(dst, req, model, compat)
	dst = appendExtra(dst, req.ExtraFor(llm.APIOpenAIChat), nil)
	return append(dst, '}')
}

func appendChatSystem(dst []byte, req *llm.Request, model llm.Model, compat ChatCompat) []byte {
	if len(req.System) == 0 {
		return dst
	}
	role := "system"
	if compat.DeveloperRole && model.Reasoning {
		role = "developer"
	}
	if !compat.MultipleSystemMessages {
		dst = jsonw.Comma(dst)
		dst = append(dst, `{"role":"`...)
		dst = append(dst, role...)
		dst = append(dst, `","content":"`...)
		for i, b := range req.System {
			if i > 0 {
				dst = append(dst, `\n\n`...)
			}
			dst = jsonw.PlainBody(dst, b.Text)
		}
		return append(dst, `"}`...)
	}
	for _, b := range req.System {
		dst = jsonw.Comma(dst)
		dst = append(dst, `{"role":"`...)
		dst = append(dst, role...)
		dst = append(dst, `","content":`...)
		dst = jsonw.Plain(dst, b.Text)
		dst = append(dst, '}')
	}
	return dst
}

// appendChatUser writes a user/developer/system message: a plain string
// for a single text block, parts otherwise.
func appendChatUser(dst []byte, role string, content []llm.Content) []byte {
	dst = jsonw.Comma(dst)
	dst = append(dst, `{"role":"`...)
	dst = append(dst, role...)
	dst = append(dst, `","content":`...)
	if len(content) == 1 && content[0].Type == llm.ContentText {
		dst = jsonw.Plain(dst, content[0].Text)
		return append(dst, '}')
	}
	dst = append(dst, '[')
	for i := range content {
		dst = appendChatPart(dst, &content[i])
	}
	return append(dst, "]}"...)
}

func appendChatPart(dst []byte, c *llm.Content) []byte {
	switch c.Type {
	case llm.ContentText:
		dst = jsonw.Comma(dst)
		dst = append(dst, `{"type":"text","text":`...)
		dst = jsonw.Plain(dst, c.Text)
		return append(dst, '}')
	case llm.ContentImage:
		dst = jsonw.Comma(dst)
		dst = append(dst, `{"type":"image_url","image_url":{"url":`...)
		dst = appendImageURL(dst, c)
		if c.Detail() != "" {
			dst = jsonw.PlainField(dst, "detail", c.Detail())
		}
		return append(dst, "}}"...)
	}
	return dst
}

func appendChatAssistant(dst []byte, m *llm.Message, compat ChatCompat) []byte {
	var texts, thinking, calls int
	for i := range m.Content {
		switch m.Content[i].Type {
		case llm.ContentText:
			texts++
		case llm.ContentThinking:
			thinking++
		case llm.ContentToolCall:
			calls++
		}
	}
	if texts == 0 && calls == 0 && (thinking == 0 || compat.ReasoningContentField == "") {
		return dst // nothing a Chat server can replay
	}
	dst = jsonw.Comma(dst)
	dst = append(dst, `{"role":"assistant","content":`...)
	switch {
	case texts > 0:
		dst = append(dst, '"')
		for i := range m.Content {
			if m.Content[i].Type == llm.ContentText {
				dst = jsonw.PlainBody(dst, m.Content[i].Text)
			}
		}
		dst = append(dst, '"')
	case calls > 0:
		dst = append(dst, "null"...)
	default:
		dst = append(dst, `""`...)
	}
	if thinking > 0 && compat.ReasoningContentField != "" {
		dst = jsonw.Key(dst, compat.ReasoningContentField)
		dst = append(dst, '"')
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
	return append(dst, '}')
}

// argumentsText is the argument string an encoder emits for a finished
// tool call: the model's own text, else its canonical Arguments, else "{}".
func argumentsText(c *llm.Content) string {
	if c.ArgumentsText != "" {
		return c.ArgumentsText
	}
	if len(c.Arguments) > 0 {
		return string(c.Arguments)
	}
	return "{}"
}

func appendChatToolResult(dst []byte, m *llm.Message, compat ChatCompat) []byte {
	dst = jsonw.Comma(dst)
	dst = append(dst, `{"role":"tool","tool_call_id":`...)
	dst = jsonw.Plain(dst, splitCallID(m.ToolCallID))
	if compat.ToolResultName && m.ToolName != "" {
		dst = jsonw.PlainField(dst, "name", m.ToolName)
	}
	dst = append(dst, `,"content":"`...)
	n := 0
	for i := range m.Content {
		if m.Content[i].Type == llm.ContentText {
			dst = jsonw.PlainBody(dst, m.Content[i].Text)
			n++
		}
	}
	if n == 0 && hasImage(m) {
		dst = append(dst, "(see attached image)"...)
	}
	return append(dst, `"}`...)
}

// appendToolImages writes one user message holding the images of the
// tool results that end at index last.
func appendToolImages(dst []byte, msgs []llm.Message, last int) []byte {
	first := last
	for first > 0 && msgs[first-1].Role == llm.RoleToolResult {
		first--
	}
	opened := false
	for i := first; i <= last; i++ {
		for j := range msgs[i].Content {
			c := &msgs[i].Content[j]
			if c.Type != llm.ContentImage {
				continue
			}
			if !opened {
				dst = jsonw.Comma(dst)
				dst = append(dst, `{"role":"user","content":[{"type":"text","text":"Attached image(s) from tool result:"}`...)
				opened = true
			}
			dst = appendChatPart(dst, c)
		}
	}
	if opened {
		dst = append(dst, "]}"...)
	}
	return dst
}

func appendChatTools(dst []byte, req *llm.Request, compat ChatCompat) []byte {
	n := 0
	for i := range req.Tools {
		t := &req.Tools[i]
		switch {
		case t.Native != nil:
			if t.NativeAPI != llm.APIOpenAIChat {
				continue
			}
		case t.Custom && !compat.CustomTools:
			continue
		}
		if n == 0 {
			dst = append(dst, `,"tools":[`...)
		}
		n++
		dst = jsonw.Comma(dst)
		switch {
		case t.Native != nil:
			dst = append(dst, t.Native...)
		case t.Custom:
			dst = append(dst, `{"type":"custom","custom":{"name":`...)
			dst = jsonw.Plain(dst, customName(t))
			if t.Description != "" {
				dst = jsonw.PlainField(dst, "description", t.Description)
			}
			if len(t.CustomFormat) > 0 {
				dst = jsonw.RawField(dst, "format", t.CustomFormat)
			}
			dst = append(dst, "}}"...)
		default:
			dst = append(dst, `{"type":"function","function":{"name":`...)
			dst = jsonw.Plain(dst, t.Name)
			if t.Description != "" {
				dst = jsonw.PlainField(dst, "description", t.Description)
			}
			dst = jsonw.RawField(dst, "parameters", schemaOrEmpty(t.Parameters))
			if t.Strict != nil && compat.StrictMode {
				dst = jsonw.BoolField(dst, "strict", *t.Strict)
			}
			dst = append(dst, "}}"...)
		}
	}
	if n > 0 {
		dst = append(dst, ']')
	}
	return dst
}

func customName(t *llm.Tool) string {
	if t.CustomWireName != "" {
		return t.CustomWireName
	}
	return t.Name
}

var emptySchema = []byte(`{"type":"object","properties":{}}`)

func schemaOrEmpty(s []byte) []byte {
	if len(s) == 0 {
		return emptySchema
	}
	return s
}

func appendChatOptions(dst []byte, req *llm.Request, model llm.Model, compat ChatCompat) []byte {
	if len(req.Tools) > 0 {
		dst = appendChatToolChoice(dst, req.ToolChoice)
		if req.ParallelToolCalls != nil {
			dst = jsonw.BoolField(dst, "parallel_tool_calls", *req.ParallelToolCalls)
		}
	}
	if req.MaxTokens > 0 {
		dst = jsonw.IntField(dst, compat.MaxTokensField, int64(req.MaxTokens))
	}
	dst = appendSampling(dst, req)
	if len(req.StopSequences) > 0 {
		dst = append(dst, `,"stop":[`...)
		for i, s := range req.StopSequences {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonw.Plain(dst, s)
		}
		dst = append(dst, ']')
	}
	if compat.ReasoningEffort {
		if e := wireEffort(req, model, true); e != "" {
			dst = jsonw.PlainField(dst, "reasoning_effort", e)
		}
	}
	if req.User != "" {
		dst = jsonw.PlainField(dst, "user", req.User)
	}
	if req.PromptCacheKey != "" && compat.PromptCacheKey {
		dst = jsonw.PlainField(dst, "prompt_cache_key", req.PromptCacheKey)
	}
	if req.ServiceTier != "" {
		dst = jsonw.PlainField(dst, "service_tier", req.ServiceTier)
	}
	dst = append(dst, `,"stream":true`...)
	if compat.UsageInStreaming {
		dst = append(dst, `,"stream_options":{"include_usage":true}`...)
	}
	return dst
}

func appendSampling(dst []byte, req *llm.Request) []byte {
	if req.Temperature != nil {
		dst = jsonw.Key(dst, "temperature")
		dst = jsonw.Number(dst, *req.Temperature)
	}
	if req.TopP != nil {
		dst = jsonw.Key(dst, "top_p")
		dst = jsonw.Number(dst, *req.TopP)
	}
	return dst
}

func appendChatToolChoice(dst []byte, tc llm.ToolChoice) []byte {
	switch tc.Mode {
	case llm.ToolChoiceAuto, llm.ToolChoiceNone, llm.ToolChoiceRequired:
		return jsonw.PlainField(dst, "tool_choice", string(tc.Mode))
	case llm.ToolChoiceTool:
		dst = append(dst, `,"tool_choice":{"type":"function","function":{"name":`...)
		dst = jsonw.Plain(dst, tc.Name)
		return append(dst, "}}"...)
	}
	return dst
}

// appendExtra appends the raw same-family fields in a stable (sorted)
// order, skipping the keys in skip.
func appendExtra(dst []byte, extra map[string]json.RawMessage, skip func(string) bool) []byte {
	if len(extra) == 0 {
		return dst
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if skip == nil || !skip(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		dst = jsonw.Comma(dst)
		dst = jsonw.Plain(dst, k)
		dst = append(dst, ':')
		dst = append(dst, extra[k]...)
	}
	return dst
}
