package openai

import (
	"encoding/json"

	"github.com/ompgo/omp/internal/jsonr"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/internal/toolargs"
)

// DecodeResponsesRequest decodes a /v1/responses body into a canonical
// request. instructions and system
// items become System blocks; consecutive assistant-side items (message,
// reasoning, function_call, custom_tool_call, and items without a
// canonical slot, kept as native blocks) form one assistant message.
// Reasoning items keep their whole JSON as the thinking signature so an
// OpenAI upstream can replay them. Errors are *RequestError.
func DecodeResponsesRequest(body []byte) (*llm.Request, error) {
	req := &llm.Request{OriginAPI: llm.APIOpenAIResponses}
	d := jsonr.NewReader(body)
	p := &responsesDecoder{d: d, req: req, names: map[string]string{}}
	if err := objectBody(d, responsesPrefix); err != nil {
		return nil, err
	}
	hasModel := false
	var instructions *llm.SystemBlock
	for k := range d.Fields() {
		name := string(k)
		switch name {
		case "model":
			hasModel = d.Peek() == '"'
			req.Model = d.String()
		case "instructions":
			if d.Peek() == '"' {
				instructions = &llm.SystemBlock{Text: d.String()}
			} else {
				d.Null()
			}
		case "input":
			buf := stageMessages() // a repeated member: the last one wins
			p.req.Messages = *buf
			p.input()
			p.flush()
			p.req.Messages = finishMessages(buf, p.req.Messages)
		case "tools":
			req.Tools = decodeResponsesTools(d)
		case "tool_choice":
			raw := d.Raw()
			sub := jsonr.NewReader(raw)
			if !p.knownToolChoice(raw) {
				p.extra("tool_choice", raw)
				req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceAuto}
				continue
			}
			req.ToolChoice = decodeToolChoice(sub)
		case "parallel_tool_calls":
			if !d.Null() {
				v := d.Bool()
				req.ParallelToolCalls = &v
			}
		case "max_output_tokens":
			if !d.Null() {
				req.MaxTokens = int(d.Int())
			}
		case "temperature":
			req.Temperature = optFloat(d)
		case "top_p":
			req.TopP = optFloat(d)
		case "stop":
			req.StopSequences = decodeStop(d)
		case "reasoning":
			raw := d.Raw()
			if raw == nil || string(raw) == "null" {
				continue
			}
			p.extra("reasoning", raw)
			sub := jsonr.NewReader(raw)
			for k := range sub.Fields() {
				switch string(k) {
				case "effort":
					decodeEffort(sub.String(), req, responsesPrefix, &p.err)
				case "summary":
					if sub.String() == "none" {
						req.HideThinkingSummary = true
					}
				}
			}
			if sub.Err() != nil {
				d.Fail(sub.Err())
			}
		case "stream":
			if !d.Null() {
				req.Stream = d.Bool()
			}
		case "metadata":
			req.Metadata = decodeStringMap(d)
		case "user":
			req.User = d.String()
		case "prompt_cache_key":
			req.PromptCacheKey = d.String()
		case "service_tier":
			req.ServiceTier = d.String()
		case "previous_response_id":
			req.PreviousResponseID = d.String()
		default:
			if raw := d.Raw(); raw != nil {
				p.extra(name, raw)
			}
		}
		if p.err != nil {
			return nil, p.err
		}
	}
	if err := d.End(); err != nil {
		return nil, decodeError(responsesPrefix, err)
	}
	if p.err != nil {
		return nil, p.err
	}
	if !hasModel || req.Model == "" {
		return nil, &RequestError{Message: errMissingModel}
	}
	p.flush()
	if instructions != nil {
		req.System = append([]llm.SystemBlock{*instructions}, req.System...)
	}
	return req, nil
}

type responsesDecoder struct {
	d     *jsonr.Reader
	req   *llm.Request
	names map[string]string // call id → tool name
	// asst is the assistant message being assembled from consecutive
	// assistant-side items.
	asst    *llm.Message
	asstBuf llm.Message
	err     error
	// parts, output and stage hold blocks while they are read; messages
	// get exact copies.
	parts, output, stage []llm.Content
}

func (p *responsesDecoder) extra(name string, raw []byte) {
	if p.req.Extra == nil {
		p.req.Extra = map[string]json.RawMessage{}
	}
	p.req.Extra[name] = raw
}

func (p *responsesDecoder) knownToolChoice(raw []byte) bool {
	if len(raw) > 0 && raw[0] == '"' {
		return true
	}
	sub := jsonr.NewReader(raw)
	for k := range sub.Fields() {
		if string(k) == "type" {
			switch sub.String() {
			case "function", "custom", "auto", "none", "required", "tool", "any":
				return true
			}
		}
	}
	return false
}

// flush appends the pending assistant message.
func (p *responsesDecoder) flush() {
	if p.asst != nil {
		p.stage = p.asst.Content[:0]
		p.asst.Content = copyContent(p.asst.Content)
		p.req.Messages = append(p.req.Messages, *p.asst)
		p.asst = nil
	}
}

func (p *responsesDecoder) assistant() *llm.Message {
	if p.asst == nil {
		p.asstBuf = llm.Message{Role: llm.RoleAssistant, API: llm.APIOpenAIResponses, Content: p.stage[:0]}
		p.asst = &p.asstBuf // flush copies it out, so one buffer serves every message
	}
	return p.asst
}

// responsesItem is the union of the input item fields we read.
type responsesItem struct {
	typ, role, id, callID, name, arguments, input, encrypted string
	hasArguments                                             bool
	parts                                                    []llm.Content
	summary                                                  []string
	output                                                   []llm.Content
	raw                                                      []byte
}

func (p *responsesDecoder) input() {
	d := p.d
	if d.Peek() == '"' {
		p.req.Messages = append(p.req.Messages, llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text(d.String())}})
		return
	}
	for i := range d.Elems() {
		it := p.item()
		if d.Err() != nil || p.err != nil {
			return
		}
		p.apply(i, &it)
	}
}

func (p *responsesDecoder) item() responsesItem {
	d := p.d
	var it responsesItem
	start := d.Mark()
	sub := d
	for k := range sub.Fields() {
		switch string(k) {
		case "type":
			it.typ = sub.String()
		case "role":
			it.role = sub.String()
		case "id":
			it.id = sub.String()
		case "call_id":
			it.callID = sub.String()
		case "name":
			it.name = sub.String()
		case "arguments":
			it.hasArguments = true
			if sub.Peek() == '"' {
				it.arguments = sub.String()
			} else {
				it.arguments = string(sub.Raw())
			}
		case "input":
			it.input = sub.String()
		case "encrypted_content":
			it.encrypted = sub.String()
		case "content":
			it.parts = decodeChatContent(sub, p.parts[:0])
			p.parts = it.parts
		case "summary":
			for range sub.Elems() {
				for k := range sub.Fields() {
					if string(k) == "text" {
						it.summary = append(it.summary, sub.String())
					}
				}
			}
		case "output":
			it.output = decodeChatContent(sub, p.output[:0])
			p.output = it.output
		}
	}
	it.raw = d.Since(start)
	return it
}

func (p *responsesDecoder) apply(i int, it *responsesItem) {
	switch it.typ {
	case "", "message":
		p.applyMessage(i, it)
	case "reasoning":
		p.applyReasoning(it)
	case "function_call", "custom_tool_call":
		p.applyCall(it)
	case "function_call_output", "custom_tool_call_output":
		p.flush()
		m := llm.Message{Role: llm.RoleToolResult, ToolCallID: it.callID, ToolName: p.names[it.callID]}
		m.Content = copyContent(it.output)
		p.req.Messages = append(p.req.Messages, m)
	default:
		// item_reference, hosted tool calls, …: only an OpenAI Responses
		// upstream can use them; they ride along as native blocks.
		m := p.assistant()
		m.Content = append(m.Content, llm.Native(llm.APIOpenAIResponses, it.raw))
	}
}

// applyMessage, applyReasoning and applyCall are apply's cases.
func (p *responsesDecoder) applyMessage(i int, it *responsesItem) {
	switch it.role {
	case "system":
		p.flush()
		text := ""
		for _, pt := range it.parts {
			text += pt.Text
		}
		p.req.System = append(p.req.System, llm.SystemBlock{Text: text})
	case "user", "developer":
		p.flush()
		m := llm.Message{Role: llm.RoleUser, Content: copyContent(it.parts)}
		if it.role == "developer" {
			m.Role = llm.RoleDeveloper
		}
		p.req.Messages = append(p.req.Messages, m)
	case "assistant":
		m := p.assistant()
		for _, c := range it.parts {
			c.SetTextSignature(it.id)
			m.Content = append(m.Content, c)
		}
	default:
		p.err = schemaErr(responsesPrefix, "input[%d].role: unsupported role %q", i, it.role)
		p.d.Fail(p.err)
	}
}

func (p *responsesDecoder) applyReasoning(it *responsesItem) {
	m := p.assistant()
	c := llm.Content{Type: llm.ContentThinking, ThinkingSignature: string(it.raw)}
	c.SetItemID(it.id)
	for j, s := range it.summary {
		if j > 0 {
			c.Thinking += "\n\n"
		}
		c.Thinking += s
	}
	if sig, api, ok := decodeSignatureToken(it.encrypted); ok {
		c.ThinkingSignature = sig
		m.API = api
	}
	m.Content = append(m.Content, c)
}

func (p *responsesDecoder) applyCall(it *responsesItem) {
	m := p.assistant()
	c := llm.Content{Type: llm.ContentToolCall, ID: it.callID, Name: it.name}
	c.SetItemID(it.id)
	if it.typ == "custom_tool_call" {
		c.SetCustomWireName(it.name)
		c.ArgumentsText = it.input
		c.Arguments = toolargs.Finalize(it.input)
	} else {
		c.ArgumentsText = it.arguments
		if it.arguments != "" && !jsonr.ValidString(it.arguments) {
			p.err = schemaErr(responsesPrefix, "function_call %s has invalid JSON arguments", it.callID)
			p.d.Fail(p.err)
			return
		}
		c.Arguments = toolargs.Finalize(it.arguments)
	}
	p.names[it.callID] = it.name
	m.Content = append(m.Content, c)
}

// decodeToolField reads the value of one function or custom tool field
// shared by the Chat (nested under "function"/"custom") and Responses (flat)
// tool shapes; other fields are skipped by the caller's iterator.
func decodeToolField(sub *jsonr.Reader, k []byte, t *llm.Tool) {
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

func decodeResponsesTools(d *jsonr.Reader) []llm.Tool {
	var tools []llm.Tool
	for range d.Elems() {
		var t llm.Tool
		var typ string
		raw := d.Raw()
		sub := jsonr.NewReader(raw)
		for k := range sub.Fields() {
			switch string(k) {
			case "type":
				typ = sub.String()
			default:
				decodeToolField(sub, k, &t)
			}
		}
		if sub.Err() != nil {
			d.Fail(sub.Err())
			return nil
		}
		switch typ {
		case "function":
		case "custom":
			t.Custom, t.CustomWireName = true, t.Name
		default:
			t = llm.Tool{Name: typ, Native: raw, NativeAPI: llm.APIOpenAIResponses}
		}
		tools = append(tools, t)
	}
	return tools
}
