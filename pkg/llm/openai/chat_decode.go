package openai

import (
	"bytes"
	"encoding/json"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/openai/internal/jsonx"
)

// DecodeChatRequest decodes a /v1/chat/completions body into a canonical
// request (gateway.md §6.2, wire-formats.md §4.2). System messages become
// System blocks; tool messages become tool results named after their call;
// fields without a canonical slot are kept raw in Extra for a Chat
// upstream. Errors are *RequestError.
func DecodeChatRequest(body []byte) (*llm.Request, error) {
	req := &llm.Request{OriginAPI: llm.APIOpenAIChat}
	d := jsonx.NewDecoder(body)
	p := chatDecoder{d: d, req: req, names: map[string]string{}}
	if d.Kind() != '{' {
		if d.Err() == nil {
			d.Skip()
			if d.Err() == nil {
				return nil, &RequestError{Message: "Invalid JSON body: body must be a JSON object"}
			}
		}
		return nil, decodeError(chatPrefix, d.Err())
	}
	hasModel := false
	for k := range d.Fields() {
		name := string(k)
		switch name {
		case "model":
			if d.Kind() == '"' {
				hasModel = true
			}
			req.Model = d.String()
		case "messages":
			// Size the slice once: growing hundreds of large Message
			// values costs more than counting.
			req.Messages = make([]llm.Message, 0, bytes.Count(body, []byte(`"role"`)))
			p.messages()
		case "tools":
			req.Tools = decodeChatTools(d)
		case "tool_choice":
			req.ToolChoice = decodeToolChoice(d)
		case "parallel_tool_calls":
			if !d.Null() {
				v := d.Bool()
				req.ParallelToolCalls = &v
			}
		case "max_completion_tokens":
			if !d.Null() {
				req.MaxTokens = int(d.Int())
				p.sawMaxCompletion = true
			}
		case "max_tokens":
			if !d.Null() {
				if n := int(d.Int()); !p.sawMaxCompletion {
					req.MaxTokens = n
				}
			}
		case "temperature":
			req.Temperature = optFloat(d)
		case "top_p":
			req.TopP = optFloat(d)
		case "stop":
			req.StopSequences = decodeStop(d)
		case "reasoning_effort":
			decodeEffort(d.String(), req, chatPrefix, &p.err)
		case "stream":
			if !d.Null() {
				req.Stream = d.Bool()
			}
		case "stream_options":
			for k := range d.Fields() {
				if string(k) == "include_usage" && !d.Null() {
					req.IncludeStreamingUsage = d.Bool()
				}
			}
		case "metadata":
			req.Metadata = decodeStringMap(d)
		case "user":
			req.User = d.String()
		case "prompt_cache_key":
			req.PromptCacheKey = d.String()
		case "service_tier":
			req.ServiceTier = d.String()
		default:
			raw := d.Raw()
			if raw != nil {
				if req.Extra == nil {
					req.Extra = map[string]json.RawMessage{}
				}
				req.Extra[name] = raw
			}
		}
		if p.err != nil {
			return nil, p.err
		}
	}
	if err := d.End(); err != nil {
		return nil, decodeError(chatPrefix, err)
	}
	if p.err != nil {
		return nil, p.err
	}
	if !hasModel || req.Model == "" {
		return nil, &RequestError{Message: errMissingModel}
	}
	return req, nil
}

type chatDecoder struct {
	d   *jsonx.Decoder
	req *llm.Request
	// names maps tool-call ids to their tool names, so tool messages
	// (which carry no name) can be named.
	names            map[string]string
	sawMaxCompletion bool
	err              error
}

func (p *chatDecoder) messages() {
	d := p.d
	for i := range d.Elems() {
		var (
			role, toolCallID, name, reasoning string
			parts                             []llm.Content
			calls                             []llm.Content
			cache                             *llm.CacheControl
		)
		for k := range d.Fields() {
			switch string(k) {
			case "role":
				role = d.String()
			case "content":
				parts = decodeChatContent(d, parts)
			case "refusal":
				if s := d.String(); s != "" {
					parts = append(parts, llm.Text(s))
				}
			case "tool_call_id":
				toolCallID = d.String()
			case "name":
				name = d.String()
			case "reasoning_content", "reasoning":
				if d.Kind() == '"' {
					reasoning += d.String()
				}
			case "tool_calls":
				calls = decodeChatToolCalls(d, calls)
			case "cache_control":
				cache = decodeCache(d)
			}
		}
		if d.Err() != nil {
			return
		}
		switch role {
		case "system":
			text := ""
			for _, pt := range parts {
				text += pt.Text
				if pt.Cache != nil {
					cache = pt.Cache
				}
			}
			p.req.System = append(p.req.System, llm.SystemBlock{Text: text, Cache: cache})
		case "user", "developer":
			m := llm.Message{Role: llm.RoleUser, Content: parts, Cache: cache}
			if role == "developer" {
				m.Role = llm.RoleDeveloper
			}
			p.req.Messages = append(p.req.Messages, m)
		case "assistant":
			m := llm.Message{Role: llm.RoleAssistant, API: llm.APIOpenAIChat, Cache: cache}
			if reasoning != "" {
				m.Content = append(m.Content, llm.Content{Type: llm.ContentThinking, Thinking: reasoning})
			}
			for _, pt := range parts {
				if pt.Type == llm.ContentText && pt.Text == "" {
					continue // "" content next to tool calls is not a block
				}
				m.Content = append(m.Content, pt)
			}
			for _, c := range calls {
				p.names[c.ID] = c.Name
			}
			m.Content = append(m.Content, calls...)
			p.req.Messages = append(p.req.Messages, m)
		case "tool", "function":
			id := toolCallID
			if role == "function" && id == "" {
				id = name
			}
			tn := p.names[id]
			if tn == "" {
				tn = name
			}
			m := llm.Message{Role: llm.RoleToolResult, ToolCallID: id, ToolName: tn, Cache: cache}
			m.Content = parts
			p.req.Messages = append(p.req.Messages, m)
		default:
			p.err = schemaErr(chatPrefix, "messages[%d].role: unsupported role %q", i, role)
			d.Fail(p.err)
			return
		}
	}
}

// decodeChatContent appends the blocks of a string, null or an array of
// parts (text, image_url, refusal, file; other parts become a "[type]"
// placeholder).
func decodeChatContent(d *jsonx.Decoder, dst []llm.Content) []llm.Content {
	switch d.Kind() {
	case '"':
		return append(dst, llm.Text(d.String()))
	case 'n':
		d.Null()
		return dst
	}
	for range d.Elems() {
		if d.Kind() == '"' { // tolerated: a bare string part
			dst = append(dst, llm.Text(d.String()))
			continue
		}
		var typ, text, url, detail, other string
		var cache *llm.CacheControl
		for k := range d.Fields() {
			switch string(k) {
			case "type":
				typ = d.String()
			case "text", "refusal":
				text = d.String()
			case "image_url":
				if d.Kind() == '"' {
					url = d.String()
					continue
				}
				for k := range d.Fields() {
					switch string(k) {
					case "url":
						url = d.String()
					case "detail":
						detail = d.String()
					}
				}
			case "detail":
				detail = d.String()
			case "file":
				for k := range d.Fields() {
					if s := string(k); s == "filename" || (s == "file_id" && other == "") {
						other = d.String()
					}
				}
			case "filename", "file_id", "file_url":
				if other == "" {
					other = d.String()
				}
			case "cache_control":
				cache = decodeCache(d)
			}
		}
		var c llm.Content
		switch typ {
		case "text", "input_text", "output_text", "refusal", "summary_text":
			c = llm.Text(text)
		case "image_url", "input_image":
			c = imageFromURL(url, detail)
		case "file", "input_file":
			c = llm.Text("[file: " + other + "]")
		default:
			c = llm.Text("[" + typ + "]")
		}
		c.Cache = cache
		dst = append(dst, c)
	}
	return dst
}

func decodeChatToolCalls(d *jsonx.Decoder, calls []llm.Content) []llm.Content {
	for range d.Elems() {
		var id, name, args string
		var custom bool
		for k := range d.Fields() {
			switch string(k) {
			case "id":
				id = d.String()
			case "type":
				custom = d.String() == "custom"
			case "function", "custom":
				for k := range d.Fields() {
					switch string(k) {
					case "name":
						name = d.String()
					case "arguments", "input":
						if d.Kind() == '"' {
							args = d.String()
						} else {
							args = string(d.Raw()) // tolerated: an object
						}
					}
				}
			}
		}
		c := llm.Content{Type: llm.ContentToolCall, ID: id, Name: name, ArgumentsText: args}
		c.Arguments = llm.FinalizeArguments(args)
		if custom {
			c.CustomWireName = name
		}
		calls = append(calls, c)
	}
	return calls
}

func decodeChatTools(d *jsonx.Decoder) []llm.Tool {
	var tools []llm.Tool
	for range d.Elems() {
		var t llm.Tool
		var typ string
		var raw = d.Raw()
		sub := jsonx.NewDecoder(raw)
		for k := range sub.Fields() {
			switch string(k) {
			case "type":
				typ = sub.String()
			case "function", "custom":
				for k := range sub.Fields() {
					switch string(k) {
					case "name":
						t.Name = sub.String()
					case "description":
						t.Description = sub.String()
					case "parameters":
						if !sub.Null() {
							t.Parameters = sub.Raw()
						}
					case "strict":
						if !sub.Null() {
							v := sub.Bool()
							t.Strict = &v
						}
					case "format":
						t.CustomFormat = sub.Raw()
					}
				}
			case "cache_control":
				t.Cache = decodeCache(sub)
			}
		}
		if sub.Err() != nil {
			d.Fail(sub.Err())
			return nil
		}
		switch typ {
		case "function", "":
		case "custom":
			t.Custom, t.CustomWireName = true, t.Name
		default:
			t.Native, t.NativeAPI, t.Name = raw, llm.APIOpenAIChat, typ
		}
		tools = append(tools, t)
	}
	return tools
}

// decodeToolChoice reads the Chat / Responses tool_choice forms, plus the
// Anthropic-style {"type":"tool","name"} the reference accepts.
func decodeToolChoice(d *jsonx.Decoder) llm.ToolChoice {
	if d.Kind() == '"' {
		switch s := d.String(); s {
		case "auto", "none", "required":
			return llm.ToolChoice{Mode: llm.ToolChoiceMode(s)}
		case "any":
			return llm.ToolChoice{Mode: llm.ToolChoiceRequired}
		}
		return llm.ToolChoice{Mode: llm.ToolChoiceAuto}
	}
	if d.Null() {
		return llm.ToolChoice{}
	}
	var typ, name string
	for k := range d.Fields() {
		switch string(k) {
		case "type":
			typ = d.String()
		case "name":
			name = d.String()
		case "function", "custom":
			for k := range d.Fields() {
				if string(k) == "name" {
					name = d.String()
				}
			}
		}
	}
	switch typ {
	case "function", "tool", "custom":
		return llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: name}
	case "any":
		return llm.ToolChoice{Mode: llm.ToolChoiceRequired}
	case "auto", "none":
		return llm.ToolChoice{Mode: llm.ToolChoiceMode(typ)}
	}
	return llm.ToolChoice{Mode: llm.ToolChoiceAuto}
}

func decodeStop(d *jsonx.Decoder) []string {
	switch d.Kind() {
	case '"':
		return []string{d.String()}
	case 'n':
		d.Null()
		return nil
	}
	var out []string
	for range d.Elems() {
		out = append(out, d.String())
	}
	return out
}

func decodeStringMap(d *jsonx.Decoder) map[string]string {
	if d.Null() {
		return nil
	}
	m := map[string]string{}
	for k := range d.Fields() {
		name := string(k)
		if d.Kind() == '"' {
			m[name] = d.String()
		}
	}
	return m
}

func decodeCache(d *jsonx.Decoder) *llm.CacheControl {
	if d.Null() {
		return nil
	}
	c := &llm.CacheControl{}
	for k := range d.Fields() {
		if string(k) == "ttl" {
			c.TTL = d.String()
		}
	}
	return c
}

func optFloat(d *jsonx.Decoder) *float64 {
	if d.Null() {
		return nil
	}
	v := d.Float()
	return &v
}

// decodeEffort applies a reasoning effort value; "none" turns reasoning
// off and an unknown value is a schema error.
func decodeEffort(s string, req *llm.Request, prefix string, errp *error) {
	switch e := llm.Effort(s); {
	case s == "":
	case s == "none":
		req.DisableReasoning = true
	case e.Valid():
		req.Reasoning = e
	default:
		*errp = schemaErr(prefix, "unsupported reasoning effort %q", s)
	}
}
