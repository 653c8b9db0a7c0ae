package anthropic

import (
	"encoding/json"
	"errors"
	"sync"

	"github.com/ompgo/omp/internal/jsonr"
	"github.com/ompgo/omp/pkg/llm"
)

// DecodeRequest decodes a POST /v1/messages body into a canonical request
// in one pass (no encoding/json: see package jsonr). The request's raw
// parts (tool schemas, tool inputs, native blocks, Extra) alias body, which
// must not be modified afterwards.
//
// Failures are *llm.InvalidRequestError with the gateway's messages:
// "Invalid JSON body: …", "Missing top-level `model`
// field", and "anthropic-messages: …" schema errors.
func DecodeRequest(body []byte) (*llm.Request, error) {
	d := decoders.Get().(*decoder)
	defer d.release()
	d.r = jsonr.NewReader(body)
	return d.request()
}

// decoders reuses the decoders' staging buffers between requests.
var decoders = sync.Pool{New: func() any { return new(decoder) }}

// release drops every reference into the request and pools d.
func (d *decoder) release() {
	clear(d.scratch[:cap(d.scratch)])
	clear(d.results[:cap(d.results)])
	clear(d.msgs[:cap(d.msgs)])
	*d = decoder{scratch: d.scratch[:0], results: d.results[:0], msgs: d.msgs[:0]}
	decoders.Put(d)
}

type decoder struct {
	r     *jsonr.Reader
	field string // the top-level field being read, for error messages
	// scratch holds one message's blocks until its role is known.
	scratch []block
	// results stacks tool_result contents while they are read.
	results []llm.Content
	// msgs stages the messages; the request gets an exact copy.
	msgs []llm.Message
}

// block is one content block as read from the wire, before its role is
// known (JSON keys come in any order).
type block struct {
	typ, text, id, name, toolUseID, thinking, signature, data string
	srcType, mediaType, srcData, url                          string
	input                                                     []byte
	content                                                   []llm.Content
	isError                                                   bool
	cache                                                     *llm.CacheControl
	raw                                                       []byte
}

func (d *decoder) fail(format string, args ...any) {
	d.r.Fail(llm.InvalidRequestf("anthropic-messages: "+format, args...))
}

func (d *decoder) finish(err error) error {
	var ir *llm.InvalidRequestError
	var se *jsonr.SyntaxError
	var te *jsonr.TypeError
	switch {
	case errors.As(err, &ir):
		return err
	case errors.As(err, &se):
		return &llm.InvalidRequestError{Message: "Invalid JSON body: " + se.Error(), Err: err}
	case errors.As(err, &te):
		if d.field == "" {
			return &llm.InvalidRequestError{Message: "anthropic-messages: body must be a JSON object", Err: err}
		}
		return &llm.InvalidRequestError{Message: "anthropic-messages: invalid `" + d.field + "`: " + te.Error(), Err: err}
	}
	return &llm.InvalidRequestError{Message: "Invalid JSON body: " + err.Error(), Err: err}
}

func (d *decoder) request() (*llm.Request, error) {
	r := d.r
	req := &llm.Request{OriginAPI: llm.APIAnthropic}
	hasMax, hasMessages := false, false
	if r.BeginObject() {
		for r.More() {
			key := r.Key()
			d.field = string(key)
			switch d.field {
			case "model":
				req.Model = r.String()
			case "max_tokens":
				if !r.Null() {
					req.MaxTokens, hasMax = int(r.Int()), true
				}
			case "stream":
				req.Stream = r.Bool()
			case "system":
				d.system(req)
			case "messages":
				hasMessages = r.Peek() == '['
				d.messages(req)
			case "tools":
				d.tools(req)
			case "tool_choice":
				d.toolChoice(req)
			case "thinking":
				d.thinking(req)
			case "temperature":
				if !r.Null() {
					v := r.Float()
					req.Temperature = &v
				}
			case "top_p":
				if !r.Null() {
					v := r.Float()
					req.TopP = &v
				}
			case "top_k":
				if !r.Null() {
					v := int(r.Int())
					req.TopK = &v
				}
			case "stop_sequences":
				if !r.Null() && r.BeginArray() {
					for r.More() {
						req.StopSequences = append(req.StopSequences, r.String())
					}
				}
			case "metadata":
				if !r.Null() && r.BeginObject() {
					for r.More() {
						if string(r.Key()) == "user_id" {
							req.User = r.String()
						} else {
							r.Skip()
						}
					}
				}
			case "service_tier":
				req.ServiceTier = r.String()
			case "cache_control":
				req.CacheControl = d.cache()
			default:
				raw := r.Raw()
				if d.field == "output_config" {
					applyOutputConfig(req, raw)
				}
				if req.Extra == nil {
					req.Extra = make(map[string]json.RawMessage)
				}
				req.Extra[d.field] = raw
			}
		}
	}
	if err := r.End(); err != nil {
		return nil, d.finish(err)
	}
	switch {
	case req.Model == "":
		return nil, llm.InvalidRequestf("Missing top-level `model` field")
	case !hasMax:
		return nil, llm.InvalidRequestf("anthropic-messages: `max_tokens` is required")
	case req.MaxTokens < 1:
		return nil, llm.InvalidRequestf("anthropic-messages: `max_tokens` must be at least 1")
	case !hasMessages:
		return nil, llm.InvalidRequestf("anthropic-messages: `messages` must be an array")
	}
	return req, nil
}

func applyOutputConfig(req *llm.Request, raw []byte) {
	r := jsonr.NewReader(raw)
	if !r.BeginObject() {
		return
	}
	for r.More() {
		if string(r.Key()) != "effort" {
			r.Skip()
			continue
		}
		switch e := r.String(); e {
		case "low", "medium", "high", "xhigh":
			req.Reasoning = llm.Effort(e)
		case "max":
			req.Reasoning = llm.EffortXHigh
		}
	}
}

func (d *decoder) cache() *llm.CacheControl {
	r := d.r
	if r.Null() || !r.BeginObject() {
		return nil
	}
	c := &llm.CacheControl{}
	for r.More() {
		if string(r.Key()) == "ttl" {
			c.TTL = r.String()
		} else {
			r.Skip()
		}
	}
	return c
}

func (d *decoder) system(req *llm.Request) {
	r := d.r
	switch r.Peek() {
	case '"':
		if s := r.String(); s != "" {
			req.System = append(req.System, llm.SystemBlock{Text: s})
		}
		return
	case 'n':
		r.Null()
		return
	}
	if !r.BeginArray() {
		return
	}
	for r.More() {
		b := d.block()
		if b.typ != "text" {
			d.fail("system blocks must be text, got %q", b.typ)
			return
		}
		req.System = append(req.System, llm.SystemBlock{Text: b.text, Cache: b.cache})
	}
}

// block reads one content block.
func (d *decoder) block() block {
	r := d.r
	var b block
	mark := r.Mark()
	if !r.BeginObject() {
		return b
	}
	unknown := false
	for r.More() {
		switch string(r.Key()) {
		case "type":
			b.typ = r.String()
		case "text":
			b.text = r.String()
		case "id":
			b.id = r.String()
		case "name":
			b.name = r.String()
		case "input":
			b.input = r.Raw()
		case "tool_use_id":
			b.toolUseID = r.String()
		case "content":
			b.content = d.toolResultContent()
		case "is_error":
			b.isError = r.Bool()
		case "thinking":
			b.thinking = r.String()
		case "signature":
			b.signature = r.String()
		case "data":
			b.data = r.String()
		case "cache_control":
			b.cache = d.cache()
		case "source":
			if !r.Null() && r.BeginObject() {
				for r.More() {
					switch string(r.Key()) {
					case "type":
						b.srcType = r.String()
					case "media_type":
						b.mediaType = r.String()
					case "data":
						b.srcData = r.String()
					case "url":
						b.url = r.String()
					default:
						r.Skip()
					}
				}
			}
		default:
			unknown = true
			r.Skip()
		}
	}
	switch b.typ {
	case "text", "tool_use", "tool_result", "thinking", "redacted_thinking":
		if !unknown {
			break
		}
		fallthrough
	default:
		b.raw = r.Since(mark)
	}
	return b
}

// toolResultContent reads a tool_result content (string or text/image
// blocks) straight into canonical content.
func (d *decoder) toolResultContent() []llm.Content {
	r := d.r
	switch r.Peek() {
	case '"':
		return []llm.Content{llm.Text(r.String())}
	case 'n':
		r.Null()
		return nil
	}
	if !r.BeginArray() {
		return nil
	}
	// Blocks nest (a block may hold content again), so each call owns
	// the tail of d.results from start on and gives it back.
	start := len(d.results)
	for r.More() {
		b := d.block()
		d.results = append(d.results, b.userContent())
	}
	out := newContent(len(d.results) - start)
	copy(out, d.results[start:])
	clear(d.results[start:])
	d.results = d.results[:start]
	return out
}

// userContent converts a user or tool_result block.
func (b *block) userContent() llm.Content {
	var c llm.Content
	switch {
	case b.typ == "text":
		c = llm.Text(b.text)
	case b.typ == "image" && b.srcType == "base64":
		c = llm.Image(b.mediaType, b.srcData)
	case b.typ == "image" && b.srcType == "url":
		c = llm.Content{Type: llm.ContentImage, Extra: &llm.ContentExtra{URL: b.url}}
	case b.raw != nil:
		c = llm.Native(llm.APIAnthropic, b.raw)
	default:
		c = llm.Text("[" + b.typ + "]")
	}
	c.SetCache(b.cache)
	return c
}

func (b *block) assistantContent() llm.Content {
	var c llm.Content
	switch b.typ {
	case "text":
		c = llm.Text(b.text)
	case "thinking":
		c = llm.Content{Type: llm.ContentThinking, Thinking: b.thinking, ThinkingSignature: b.signature}
	case "redacted_thinking":
		c = llm.Content{Type: llm.ContentRedactedThinking, Data: b.data}
	case "tool_use":
		c = llm.Content{Type: llm.ContentToolCall, ID: b.id, Name: b.name}
		if len(b.input) > 0 && b.input[0] == '{' {
			c.Arguments = b.input // already validated by the reader
		} else {
			c.Arguments, c.ArgumentsText = llm.NormalizeArguments(b.input)
		}
	default:
		c = llm.Native(llm.APIAnthropic, b.raw)
	}
	c.SetCache(b.cache)
	return c
}

func (d *decoder) messages(req *llm.Request) {
	r := d.r
	if !r.BeginArray() {
		return
	}
	// Messages are staged in a pooled buffer and copied out once:
	// growing hundreds of large Message values costs more.
	d.msgs = d.msgs[:0]
	defer func() {
		req.Messages = append(make([]llm.Message, 0, len(d.msgs)), d.msgs...)
	}()
	for i := 0; r.More(); i++ {
		role := ""
		d.scratch = d.scratch[:0]
		if !r.BeginObject() {
			return
		}
		for r.More() {
			switch string(r.Key()) {
			case "role":
				role = r.String()
			case "content":
				switch r.Peek() {
				case '"':
					d.scratch = append(d.scratch, block{typ: "text", text: r.String()})
				case 'n':
					r.Null()
				default:
					if r.BeginArray() {
						for r.More() {
							d.scratch = append(d.scratch, d.block())
						}
					}
				}
			default:
				r.Skip()
			}
		}
		if r.Err() != nil {
			return
		}
		if !d.addMessage(i, role) {
			return
		}
	}
}

// newContent returns n zeroed blocks, nil for none.
func newContent(n int) []llm.Content {
	if n == 0 {
		return nil
	}
	return make([]llm.Content, n)
}

// addMessage appends the canonical message(s) of messages[i], whose
// blocks are in d.scratch; false after a failure.
func (d *decoder) addMessage(i int, role string) bool {
	switch role {
	case "user":
		n := 0
		for k := range d.scratch {
			if d.scratch[k].typ != "tool_result" {
				n++
			}
		}
		content := newContent(n)[:0]
		for k := range d.scratch {
			b := &d.scratch[k]
			if b.typ != "tool_result" {
				content = append(content, b.userContent())
				continue
			}
			if b.toolUseID == "" {
				d.fail("messages[%d]: tool_result.tool_use_id is required", i)
				return false
			}
			name := toolName(d.msgs, b.toolUseID)
			m := d.push(llm.RoleToolResult)
			m.ToolCallID, m.IsError, m.Cache, m.Content, m.ToolName = b.toolUseID, b.isError, b.cache, b.content, name
		}
		if len(content) > 0 || len(d.scratch) == 0 {
			d.push(llm.RoleUser).Content = content
		}
	case "assistant":
		content := newContent(len(d.scratch))
		for k := range d.scratch {
			content[k] = d.scratch[k].assistantContent()
		}
		m := d.push(llm.RoleAssistant)
		m.API, m.Provider, m.Content = llm.APIAnthropic, "anthropic", content
	case "system":
		// Claude Code puts mid-conversation system entries in messages[]
		// for its newest models. Canonically they are developer
		// messages: this wire hoists them into top-level system blocks
		// in order, the OpenAI wires keep them in place.
		content := newContent(len(d.scratch))[:0]
		for k := range d.scratch {
			b := &d.scratch[k]
			if b.typ != "text" {
				d.fail("messages[%d]: a system message may hold only text blocks, got %q", i, b.typ)
				return false
			}
			content = append(content, b.userContent())
		}
		d.push(llm.RoleDeveloper).Content = content
	default:
		d.fail("messages[%d].role must be user, assistant or system, got %q", i, role)
		return false
	}
	return true
}

// push appends a message of role to the staged messages and returns it,
// to be filled in place rather than built in a temporary of the caller's
// frame.
func (d *decoder) push(role llm.Role) *llm.Message {
	d.msgs = append(d.msgs, llm.Message{})
	m := &d.msgs[len(d.msgs)-1]
	m.Role = role
	return m
}
