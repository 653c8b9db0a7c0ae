package openai

import (
	"github.com/ompgo/omp/internal/jsonr"
	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/llm"
)

// responsesBodyMode selects the OpenAI Responses or the Codex dialect.
type responsesBodyMode uint8

const (
	modeResponses responsesBodyMode = iota
	modeCodex
)

// Fields the Codex backend rejects; they are never
// forwarded from Extra either.
var codexStripped = map[string]bool{
	"max_output_tokens": true, "max_completion_tokens": true, "temperature": true, "top_p": true,
	"truncation": true, "user": true, "previous_response_id": true, "prompt_cache_retention": true,
	"safety_identifier": true, "stream_options": true, "service_tier": true,
	// Set by the adapter itself.
	"stream": true, "store": true, "include": true, "instructions": true, "reasoning": true,
	"tool_choice": true, "background": true, "conversation": true,
}

// Responses fields a same-family client may set that replace the
// adapter's own choice.
var responsesClientWins = map[string]bool{"store": true, "include": true, "tool_choice": true, "reasoning": true}

// AppendResponsesBody appends the OpenAI Responses request body for req
// sent to model. The request streams, is
// stateless (store:false with encrypted reasoning included) unless the
// client asked otherwise, and replays OpenAI reasoning items verbatim.
func AppendResponsesBody(dst []byte, req *llm.Request, model llm.Model) []byte {
	return appendResponsesBody(dst, req, model, modeResponses)
}

// AppendCodexBody appends the ChatGPT-Codex backend request body: the
// Responses body with stream:true, store:false, instructions always
// present, encrypted reasoning included, "minimal" effort raised to "low"
// and the fields the backend rejects stripped.
func AppendCodexBody(dst []byte, req *llm.Request, model llm.Model) []byte {
	return appendResponsesBody(dst, req, model, modeCodex)
}

func appendResponsesBody(dst []byte, req *llm.Request, model llm.Model, mode responsesBodyMode) []byte {
	codex := mode == modeCodex
	extra := req.ExtraFor(llm.APIOpenAIResponses)
	clientSets := func(k string) bool {
		_, ok := extra[k]
		return ok && !codex && responsesClientWins[k]
	}
	dst = append(dst, '{')
	dst = jsonw.PlainField(dst, "model", model.WireID())
	if len(req.System) > 0 {
		dst = jsonw.PlainField(dst, "instructions", req.System[0].Text)
	} else if codex {
		dst = append(dst, `,"instructions":""`...)
	}
	dst = append(dst, `,"input":[`...)
	for _, b := range req.System[min(1, len(req.System)):] {
		dst = jsonw.Comma(dst)
		dst = append(dst, `{"type":"message","role":"developer","content":[{"type":"input_text","text":`...)
		dst = jsonw.Plain(dst, b.Text)
		dst = append(dst, "}]}"...)
	}
	custom := map[string]bool{}
	for i := range req.Messages {
		m := &req.Messages[i]
		switch m.Role {
		case llm.RoleUser, llm.RoleDeveloper:
			dst = appendResponsesUser(dst, m)
		case llm.RoleAssistant:
			dst = appendResponsesAssistant(dst, m, codex, custom)
		case llm.RoleToolResult:
			dst = appendResponsesToolResult(dst, m, custom[m.ToolCallID])
		}
	}
	dst = append(dst, ']')
	dst = appendResponsesTools(dst, req)
	if len(req.Tools) > 0 {
		if !clientSets("tool_choice") {
			dst = appendResponsesToolChoice(dst, req.ToolChoice)
		}
		if req.ParallelToolCalls != nil {
			dst = jsonw.BoolField(dst, "parallel_tool_calls", *req.ParallelToolCalls)
		}
	}
	if !codex {
		if req.MaxTokens > 0 {
			dst = jsonw.IntField(dst, "max_output_tokens", int64(max(req.MaxTokens, 16)))
		}
		dst = appendSampling(dst, req)
	}
	if e := wireEffort(req, model, !codex); (e != "" || codex && model.Reasoning && !req.DisableReasoning) && !clientSets("reasoning") {
		dst = append(dst, `,"reasoning":{`...)
		if e != "" {
			dst = jsonw.PlainField(dst, "effort", e)
		}
		if !req.HideThinkingSummary {
			dst = jsonw.PlainField(dst, "summary", "auto")
		}
		dst = append(dst, '}')
	}
	if !clientSets("include") && (codex || model.Reasoning) {
		dst = append(dst, `,"include":["reasoning.encrypted_content"]`...)
	}
	if !clientSets("store") {
		dst = append(dst, `,"store":false`...)
	}
	dst = append(dst, `,"stream":true`...)
	if req.PromptCacheKey != "" {
		dst = jsonw.PlainField(dst, "prompt_cache_key", req.PromptCacheKey)
	}
	if !codex {
		if req.User != "" {
			dst = jsonw.PlainField(dst, "user", req.User)
		}
		if len(req.Metadata) > 0 {
			dst = appendStringMap(dst, "metadata", req.Metadata)
		}
		if req.PreviousResponseID != "" {
			dst = jsonw.PlainField(dst, "previous_response_id", req.PreviousResponseID)
		}
	}
	if req.ServiceTier != "" && (!codex || req.ServiceTier == "priority") {
		dst = jsonw.PlainField(dst, "service_tier", req.ServiceTier)
	}
	var skip func(string) bool
	if codex {
		skip = func(k string) bool { return codexStripped[k] || k == "metadata" }
	}
	dst = appendExtra(dst, extra, skip)
	return append(dst, '}')
}

func appendStringMap(dst []byte, key string, m map[string]string) []byte {
	dst = jsonw.Key(dst, key)
	dst = append(dst, '{')
	for _, k := range sortedKeys(m) {
		dst = jsonw.Comma(dst)
		dst = jsonw.Plain(dst, k)
		dst = append(dst, ':')
		dst = jsonw.Plain(dst, m[k])
	}
	return append(dst, '}')
}

func appendResponsesUser(dst []byte, m *llm.Message) []byte {
	dst = jsonw.Comma(dst)
	dst = append(dst, `{"type":"message","role":"`...)
	if m.Role == llm.RoleDeveloper {
		dst = append(dst, "developer"...)
	} else {
		dst = append(dst, "user"...)
	}
	dst = append(dst, `","content":[`...)
	for i := range m.Content {
		dst = appendResponsesInputPart(dst, &m.Content[i])
	}
	return append(dst, "]}"...)
}

func appendResponsesInputPart(dst []byte, c *llm.Content) []byte {
	switch c.Type {
	case llm.ContentText:
		dst = jsonw.Comma(dst)
		dst = append(dst, `{"type":"input_text","text":`...)
		dst = jsonw.Plain(dst, c.Text)
		return append(dst, '}')
	case llm.ContentImage:
		dst = jsonw.Comma(dst)
		dst = append(dst, `{"type":"input_image","image_url":`...)
		dst = appendImageURL(dst, c)
		detail := c.Detail()
		if detail == "" {
			detail = "auto"
		}
		dst = jsonw.PlainField(dst, "detail", detail)
		return append(dst, '}')
	}
	return dst
}

// isResponsesFamily reports whether api produced Responses-shaped items.
func isResponsesFamily(api string) bool {
	return api == llm.APIOpenAIResponses || api == llm.APICodex
}

func appendResponsesAssistant(dst []byte, m *llm.Message, codex bool, custom map[string]bool) []byte {
	sameFamily := isResponsesFamily(m.API)
	inText := false
	closeText := func() {
		if inText {
			dst = append(dst, "]}"...)
			inText = false
		}
	}
	for i := range m.Content {
		c := &m.Content[i]
		switch c.Type {
		case llm.ContentText:
			if c.Text == "" {
				continue
			}
			if !inText {
				dst = jsonw.Comma(dst)
				dst = append(dst, `{"type":"message","role":"assistant","status":"completed","content":[`...)
				inText = true
			}
			dst = jsonw.Comma(dst)
			dst = append(dst, `{"type":"output_text","text":`...)
			dst = jsonw.Plain(dst, c.Text)
			dst = append(dst, `,"annotations":[]}`...)
		case llm.ContentThinking:
			// Only OpenAI's own reasoning items can be replayed; foreign
			// reasoning has no valid encrypted_content here.
			sig, ok := replayableReasoning(c.ThinkingSignature, sameFamily, codex)
			if !ok {
				continue
			}
			closeText()
			dst = jsonw.Comma(dst)
			if codex {
				dst = appendWithoutKey(dst, []byte(sig), "id")
			} else {
				dst = append(dst, sig...)
			}
		case llm.ContentToolCall:
			closeText()
			dst = jsonw.Comma(dst)
			callID := splitCallID(c.ID)
			if c.CustomWireName() != "" {
				custom[c.ID] = true
				dst = append(dst, `{"type":"custom_tool_call","call_id":`...)
				dst = jsonw.Plain(dst, callID)
				dst = jsonw.PlainField(dst, "name", c.CustomWireName())
				dst = jsonw.PlainField(dst, "input", c.ArgumentsText)
			} else {
				dst = append(dst, `{"type":"function_call","call_id":`...)
				dst = jsonw.Plain(dst, callID)
				dst = jsonw.PlainField(dst, "name", c.Name)
				dst = jsonw.PlainField(dst, "arguments", argumentsText(c))
			}
			dst = append(dst, '}')
		case llm.ContentNative:
			if c.NativeAPI() == llm.APIOpenAIResponses && !codex {
				closeText()
				dst = jsonw.Comma(dst)
				dst = append(dst, c.Raw()...)
			}
		}
	}
	closeText()
	return dst
}

func appendResponsesToolResult(dst []byte, m *llm.Message, custom bool) []byte {
	dst = jsonw.Comma(dst)
	if custom {
		dst = append(dst, `{"type":"custom_tool_call_output","call_id":`...)
	} else {
		dst = append(dst, `{"type":"function_call_output","call_id":`...)
	}
	dst = jsonw.Plain(dst, splitCallID(m.ToolCallID))
	dst = append(dst, `,"output":`...)
	if hasImage(m) {
		dst = append(dst, '[')
		for i := range m.Content {
			dst = appendResponsesInputPart(dst, &m.Content[i])
		}
		dst = append(dst, ']')
	} else {
		dst = append(dst, '"')
		for i := range m.Content {
			if m.Content[i].Type == llm.ContentText {
				dst = jsonw.PlainBody(dst, m.Content[i].Text)
			}
		}
		dst = append(dst, '"')
	}
	return append(dst, '}')
}

func appendResponsesTools(dst []byte, req *llm.Request) []byte {
	n := 0
	for i := range req.Tools {
		t := &req.Tools[i]
		if t.Native != nil && t.NativeAPI != llm.APIOpenAIResponses {
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
			dst = append(dst, `{"type":"custom","name":`...)
			dst = jsonw.Plain(dst, customName(t))
			if t.Description != "" {
				dst = jsonw.PlainField(dst, "description", t.Description)
			}
			if len(t.CustomFormat) > 0 {
				dst = jsonw.RawField(dst, "format", t.CustomFormat)
			}
			dst = append(dst, '}')
		default:
			dst = append(dst, `{"type":"function","name":`...)
			dst = jsonw.Plain(dst, t.Name)
			if t.Description != "" {
				dst = jsonw.PlainField(dst, "description", t.Description)
			}
			dst = jsonw.RawField(dst, "parameters", schemaOrEmpty(t.Parameters))
			if t.Strict != nil {
				dst = jsonw.BoolField(dst, "strict", *t.Strict)
			} else {
				dst = append(dst, `,"strict":false`...)
			}
			dst = append(dst, '}')
		}
	}
	if n > 0 {
		dst = append(dst, ']')
	}
	return dst
}

func appendResponsesToolChoice(dst []byte, tc llm.ToolChoice) []byte {
	switch tc.Mode {
	case llm.ToolChoiceAuto, llm.ToolChoiceNone, llm.ToolChoiceRequired:
		return jsonw.PlainField(dst, "tool_choice", string(tc.Mode))
	case llm.ToolChoiceTool:
		dst = append(dst, `,"tool_choice":{"type":"function","name":`...)
		dst = jsonw.Plain(dst, tc.Name)
		return append(dst, '}')
	}
	return dst
}

// appendWithoutKey re-emits the JSON object raw without its top-level
// member name. raw that is not an object is emitted unchanged.
func appendWithoutKey(dst, raw []byte, name string) []byte {
	d := jsonr.NewReader(raw)
	if d.Peek() != '{' {
		return append(dst, raw...)
	}
	mark := len(dst)
	dst = append(dst, '{')
	for k := range d.Fields() {
		if string(k) == name {
			d.Skip()
			continue
		}
		kk := string(k)
		v := d.Raw()
		dst = jsonw.Comma(dst)
		dst = jsonw.Plain(dst, kk)
		dst = append(dst, ':')
		dst = append(dst, v...)
	}
	if d.Err() != nil {
		return append(dst[:mark], raw...)
	}
	return append(dst, '}')
}

// replayableReasoning returns the reasoning item JSON to replay for a
// thinking block's signature: a Responses item kept as the signature when
// the message came from the Responses family, or the item inside a gateway
// token issued by this very upstream (OR for Responses, CX for Codex) that
// a client of another format handed back.
// Any other token is foreign reasoning and is dropped.
func replayableReasoning(sig string, sameFamily, codex bool) (string, bool) {
	if item, api, ok := llm.DecodeSignatureToken(sig); ok {
		want := llm.APIOpenAIResponses
		if codex {
			want = llm.APICodex
		}
		if api != want || len(item) == 0 || item[0] != '{' {
			return "", false
		}
		return item, true
	}
	if !sameFamily || len(sig) == 0 || sig[0] != '{' {
		return "", false
	}
	return sig, true
}
