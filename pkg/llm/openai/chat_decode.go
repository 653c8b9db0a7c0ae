package openai

import (
	"encoding/json"
	"sync"

	"github.com/ompgo/omp/internal/jsonr"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/internal/toolargs"
)

// DecodeChatRequest decodes a /v1/chat/completions body into a canonical
// request. System messages become
// System blocks; tool messages become tool results named after their call;
// fields without a canonical slot are kept raw in Extra for a Chat
// upstream. Errors are *RequestError.
func DecodeChatRequest(body []byte) (*llm.Request, error) {
	req := &llm.Request{OriginAPI: llm.APIOpenAIChat}
	d := jsonr.NewReader(body)
	p := &chatDecoder{d: d, req: req, names: map[string]string{}}
	if err := objectBody(d, chatPrefix); err != nil {
		return nil, err
	}
	hasModel := false
	for k := range d.Fields() {
		name := string(k)
		switch name {
		case "model":
			if d.Peek() == '"' {
				hasModel = true
			}
			req.Model = d.String()
		case "messages":
			buf := stageMessages() // a repeated member: the last one wins
			req.Messages = *buf
			p.messages()
			req.Messages = finishMessages(buf, req.Messages)
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

// msgStage lends pooled buffers to stage a request's messages: growing
// hundreds of large Message values, or counting them first, costs more
// than one exact copy at the end.
var msgStage = sync.Pool{New: func() any { return new([]llm.Message) }}

// stageMessages returns a pooled empty buffer.
func stageMessages() *[]llm.Message { return msgStage.Get().(*[]llm.Message) }

// finishMessages returns an exact copy of msgs (grown from *buf) and
// pools the buffer.
func finishMessages(buf *[]llm.Message, msgs []llm.Message) []llm.Message {
	out := append(make([]llm.Message, 0, len(msgs)), msgs...)
	clear(msgs[:cap(msgs)])
	*buf = msgs[:0]
	msgStage.Put(buf)
	return out
}

// copyContent returns an exact copy of src, nil when it is empty.
func copyContent(src []llm.Content) []llm.Content {
	if len(src) == 0 {
		return nil
	}
	return append(make([]llm.Content, 0, len(src)), src...)
}

// objectBody returns nil when the body is a JSON object, else its error.
func objectBody(d *jsonr.Reader, prefix string) error {
	if d.Peek() == '{' {
		return nil
	}
	if d.Err() == nil {
		d.Skip()
		if d.Err() == nil {
			return &RequestError{Message: "Invalid JSON body: body must be a JSON object"}
		}
	}
	return decodeError(prefix, d.Err())
}

type chatDecoder struct {
	d   *jsonr.Reader
	req *llm.Request
	// names maps tool-call ids to their tool names, so tool messages
	// (which carry no name) can be named.
	names            map[string]string
	sawMaxCompletion bool
	err              error
	// parts, calls and out stage one message's blocks; the message gets
	// an exact copy.
	parts, calls, out []llm.Content
}

// chatMessage is one messages[] element as read, before it becomes a
// canonical message.
type chatMessage struct {
	role, toolCallID, name, reasoning string
	parts, calls                      []llm.Content
	cache                             *llm.CacheControl
}

func (p *chatDecoder) messages() {
	d := p.d
	for i := range d.Elems() {
		m := chatMessage{parts: p.parts[:0], calls: p.calls[:0]}
		for k := range d.Fields() {
			switch string(k) {
			case "role":
				m.role = d.String()
			case "content":
				m.parts = decodeChatContent(d, m.parts)
			case "refusal":
				if s := d.String(); s != "" {
					m.parts = append(m.parts, llm.Text(s))
				}
			case "tool_call_id":
				m.toolCallID = d.String()
			case "name":
				m.name = d.String()
			case "reasoning_content", "reasoning":
				if d.Peek() == '"' {
					m.reasoning += d.String()
				}
			case "tool_calls":
				m.calls = decodeChatToolCalls(d, m.calls)
			case "cache_control":
				m.cache = decodeCache(d)
			}
		}
		p.parts, p.calls = m.parts, m.calls // keep the grown buffers
		if d.Err() != nil || !p.add(i, &m) {
			return
		}
	}
}

// add appends the canonical form of messages[i]; false after a schema
// error.
func (p *chatDecoder) add(i int, msg *chatMessage) bool {
	parts, cache := msg.parts, msg.cache
	switch msg.role {
	case "system":
		text := ""
		for _, pt := range parts {
			text += pt.Text
			if pt.Cache() != nil {
				cache = pt.Cache()
			}
		}
		p.req.System = append(p.req.System, llm.SystemBlock{Text: text, Cache: cache})
	case "user", "developer":
		role := llm.RoleUser
		if msg.role == "developer" {
			role = llm.RoleDeveloper
		}
		content := copyContent(parts)
		m := p.push(role)
		m.Content, m.Cache = content, cache
	case "assistant":
		out := p.out[:0]
		if msg.reasoning != "" {
			out = append(out, llm.Content{Type: llm.ContentThinking, Thinking: msg.reasoning})
		}
		for _, pt := range parts {
			if pt.Type == llm.ContentText && pt.Text == "" {
				continue // "" content next to tool calls is not a block
			}
			out = append(out, pt)
		}
		for _, c := range msg.calls {
			p.names[c.ID] = c.Name
		}
		out = append(out, msg.calls...)
		content := copyContent(out)
		p.out = out
		m := p.push(llm.RoleAssistant)
		m.API, m.Cache, m.Content = llm.APIOpenAIChat, cache, content
	case "tool", "function":
		id := msg.toolCallID
		if msg.role == "function" && id == "" {
			id = msg.name
		}
		tn := p.names[id]
		if tn == "" {
			tn = msg.name
		}
		content := copyContent(parts)
		m := p.push(llm.RoleToolResult)
		m.ToolCallID, m.ToolName, m.Cache, m.Content = id, tn, cache, content
	default:
		p.err = schemaErr(chatPrefix, "messages[%d].role: unsupported role %q", i, msg.role)
		p.d.Fail(p.err)
		return false
	}
	return true
}

// push appends a message of role to the request and returns it, to be
// filled in place rather than built in a temporary of the caller's frame.
// The staged buffer it grows is zeroed (finishMessages).
func (p *chatDecoder) push(role llm.Role) *llm.Message {
	p.req.Messages = append(p.req.Messages, llm.Message{})
	m := &p.req.Messages[len(p.req.Messages)-1]
	m.Role = role
	return m
}

// decodeChatContent appends the blocks of a string, null or an array of
// parts (text, image_url, refusal, file; other parts become a "[type]"
// placeholder).
func decodeChatContent(d *jsonr.Reader, dst []llm.Content) []llm.Content {
	switch d.Peek() {
	case '"':
		return append(dst, llm.Text(d.String()))
	case 'n':
		d.Null()
		return dst
	}
	for range d.Elems() {
		if d.Peek() == '"' { // tolerated: a bare string part
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
				if d.Peek() == '"' {
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
		dst = appendDecodedPart(dst, typ, text, url, detail, other, cache)
	}
	return dst
}

// appendDecodedPart appends the block of one content part.
func appendDecodedPart(dst []llm.Content, typ, text, url, detail, other string, cache *llm.CacheControl) []llm.Content {
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
	c.SetCache(cache)
	return append(dst, c)
}

func decodeChatToolCalls(d *jsonr.Reader, calls []llm.Content) []llm.Content {
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
						if d.Peek() == '"' {
							args = d.String()
						} else {
							args = string(d.Raw()) // tolerated: an object
						}
					}
				}
			}
		}
		c := llm.Content{Type: llm.ContentToolCall, ID: id, Name: name, ArgumentsText: args}
		c.Arguments = toolargs.Finalize(args)
		if custom {
			c.SetCustomWireName(name)
		}
		calls = append(calls, c)
	}
	return calls
}
