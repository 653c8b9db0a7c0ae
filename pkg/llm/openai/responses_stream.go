package openai

import (
	"encoding/json"

	"github.com/ompgo/omp/internal/jsonr"
	"github.com/ompgo/omp/pkg/llm"
)

// respEvent is one upstream Responses stream event (the fields read).
type respEvent struct {
	Type      string          `json:"type"`
	Response  *respResponse   `json:"response"`
	Item      json.RawMessage `json:"item"`
	Delta     string          `json:"delta"`
	Text      string          `json:"text"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	Refusal   string          `json:"refusal"`
	Part      *respPart       `json:"part"`
	// The flat error event.
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
	Error   json.RawMessage `json:"error"`
}

type respPart struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
}

type respResponse struct {
	ID                string `json:"id"`
	Status            string `json:"status"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	} `json:"error"`
	Usage *respUsage `json:"usage"`
}

type respUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	InputTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

func (u *respUsage) canonical() llm.Usage {
	var cached, reasoning int64
	if u.InputTokensDetails != nil {
		cached = u.InputTokensDetails.CachedTokens
	}
	if u.OutputTokensDetails != nil {
		reasoning = u.OutputTokensDetails.ReasoningTokens
	}
	return llm.Usage{Input: max(u.InputTokens-cached, 0), CacheRead: cached, Output: u.OutputTokens, Reasoning: reasoning}
}

type respItem struct {
	Type      string     `json:"type"`
	ID        string     `json:"id"`
	CallID    string     `json:"call_id"`
	Name      string     `json:"name"`
	Arguments string     `json:"arguments"`
	Input     string     `json:"input"`
	Content   []respPart `json:"content"`
	Summary   []respPart `json:"summary"`
}

// itemKind is the canonical view of the current output item.
type itemKind uint8

const (
	itemNone itemKind = iota
	itemMessage
	itemReasoning
	itemCall
	itemOther
)

// respParser turns upstream Responses events into canonical events. The
// output is rebuilt from output_item.done items, so a sparse stream (the
// Codex backend may skip deltas, and its terminal output may be empty)
// still yields every item.
type respParser struct {
	b   *llm.Builder
	api string
	ev  respEvent
	rd  jsonr.Reader // the delta fast path's reader (see fastDelta)
	// noFast makes tests decode every event with encoding/json.
	noFast bool
	item   respItem // the current item, as output_item.added had it
	done   respItem // its final form (output_item.done)
	open   llm.Content
	kind   itemKind
	// seen is set once the current block received streamed content.
	seen bool
	// block is set while the current item owns the open block.
	block bool
	parts int // reasoning summary parts seen in the current item
	// terminal is set once a terminal event was handled.
	terminal bool
}

func newRespParser(b *llm.Builder, api string) *respParser { return &respParser{b: b, api: api} }

func (p *respParser) upstreamErr(typ, code, msg string) *llm.UpstreamError {
	return &llm.UpstreamError{Provider: p.b.Message().Provider, Status: 200, Type: typ, Code: code, Message: msg}
}

// handle processes one event payload; false ends the loop.
func (p *respParser) handle(data []byte) bool {
	b := p.b
	if string(data) == "[DONE]" {
		return false
	}
	e := &p.ev
	if p.noFast || !p.fastDelta(data, e) {
		*e = respEvent{}
		if err := json.Unmarshal(data, e); err != nil {
			b.Fail(&llm.UpstreamError{Provider: b.Message().Provider, Status: 200, Message: "malformed stream event", Err: err})
			return false
		}
	}
	switch e.Type {
	case "response.created", "response.in_progress", "response.queued":
		if e.Response != nil && e.Response.ID != "" {
			b.Message().ResponseID = e.Response.ID
		}
		return b.Start()
	case "response.output_item.added":
		return p.itemAdded()
	case "response.content_part.added":
		if e.Part != nil && (e.Part.Type == "output_text" || e.Part.Type == "refusal") && p.kind == itemMessage {
			p.seen, p.block = false, true
			return b.StartText()
		}
	case "response.output_text.delta", "response.refusal.delta":
		p.seen, p.block = true, true
		return b.Text(e.Delta)
	case "response.output_text.done", "response.refusal.done":
		if !p.seen {
			p.seen, p.block = true, true
			return b.Text(e.Text + e.Refusal)
		}
	case "response.reasoning_summary_part.added":
		p.parts++
		if p.parts > 1 {
			return b.Thinking("\n\n")
		}
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		p.seen, p.block = true, true
		return b.Thinking(e.Delta)
	case "response.reasoning_summary_text.done", "response.reasoning_text.done":
		if !p.seen && e.Text != "" {
			p.seen = true
			return b.Thinking(e.Text)
		}
	case "response.function_call_arguments.delta", "response.custom_tool_call_input.delta":
		if p.kind == itemCall && p.block {
			p.seen = true
			return b.ToolArgs(e.Delta)
		}
	case "response.function_call_arguments.done", "response.custom_tool_call_input.done":
		if p.kind == itemCall && p.block && !p.seen {
			p.seen = true
			return b.ToolArgs(e.Arguments + e.Input)
		}
	case "response.output_item.done":
		return p.itemDone()
	case "response.completed", "response.incomplete", "response.failed", "response.cancelled":
		p.terminal = true
		p.finish()
		return false
	case "error":
		typ, code, msg := "", rawCode(e.Code), e.Message
		if len(e.Error) > 0 && e.Error[0] == '{' { // the wrapped form
			ue := parseErrorBody(data)
			typ, code, msg = ue.Type, ue.Code, ue.Message
		}
		p.terminal = true
		b.Fail(p.upstreamErr(typ, code, msg))
		return false
	}
	return !b.Ended()
}

func (p *respParser) itemAdded() bool {
	b := p.b
	p.item = respItem{}
	if json.Unmarshal(p.ev.Item, &p.item) != nil {
		p.kind = itemOther
		return !b.Ended()
	}
	p.seen, p.block, p.parts = false, false, 0
	switch p.item.Type {
	case "message":
		p.kind = itemMessage
	case "reasoning":
		p.kind, p.block = itemReasoning, true
		// The item id rides on the start event so an encoder's
		// output_item.added already uses it (stream/non-stream parity).
		if !b.StartBlock(thinkingItem(p.item.ID)) {
			return false
		}
	case "function_call", "custom_tool_call":
		p.kind = itemCall
		return p.startCall(&p.item)
	default:
		p.kind = itemOther
	}
	return !b.Ended()
}

// startCall opens the tool call block of it, built in the parser (p.open).
func (p *respParser) startCall(it *respItem) bool {
	p.block = true
	c := &p.open
	*c = llm.Content{Type: llm.ContentToolCall, ID: it.CallID, Name: it.Name}
	c.SetItemID(it.ID)
	if it.Type == "custom_tool_call" {
		c.SetCustomWireName(it.Name)
	}
	return p.b.StartBlock(*c)
}

// itemDone completes the current item from its final form, emitting what
// the stream did not deliver as deltas. Each item type has a function of
// its own, and the item is decoded into the parser.
func (p *respParser) itemDone() bool {
	it := &p.done
	*it = respItem{}
	if json.Unmarshal(p.ev.Item, it) != nil {
		return !p.b.Ended()
	}
	defer func() { p.kind, p.block = itemNone, false }()
	switch it.Type {
	case "message":
		return p.doneMessage(it)
	case "reasoning":
		return p.doneReasoning(it)
	case "function_call", "custom_tool_call":
		return p.doneCall(it)
	}
	return p.doneOther()
}

func (p *respParser) doneMessage(it *respItem) bool {
	b := p.b
	if !p.block {
		for _, c := range it.Content {
			if !b.StartText() || !b.Text(c.Text+c.Refusal) {
				return false
			}
		}
	}
	return b.EndBlock()
}

func (p *respParser) doneReasoning(it *respItem) bool {
	b := p.b
	if !p.block || b.Open() == nil || b.Open().Type != llm.ContentThinking {
		if !b.StartBlock(thinkingItem(it.ID)) {
			return false
		}
	}
	if !p.seen {
		for i, s := range it.Summary {
			if i > 0 && !b.Thinking("\n\n") {
				return false
			}
			if !b.Thinking(s.Text) {
				return false
			}
		}
	}
	blk := b.Open()
	blk.SetItemID(it.ID)
	// The whole item is the signature, so it can be replayed
	// verbatim (encrypted_content included).
	blk.ThinkingSignature = string(p.ev.Item)
	return b.EndBlock()
}

func (p *respParser) doneCall(it *respItem) bool {
	b := p.b
	if !p.block || b.Open() == nil || b.Open().Type != llm.ContentToolCall {
		if !p.startCall(it) {
			return false
		}
	}
	if !p.seen && !b.ToolArgs(it.Arguments+it.Input) {
		return false
	}
	if blk := b.Open(); blk.ID == "" {
		blk.ID, blk.Name = it.CallID, it.Name
	}
	return b.EndBlock()
}

func (p *respParser) doneOther() bool {
	return p.b.AddBlock(llm.Native(llm.APIOpenAIResponses, p.ev.Item))
}

// finish handles the terminal response event.
func (p *respParser) finish() {
	b, e := p.b, &p.ev
	m := b.Message()
	r := e.Response
	if r == nil {
		r = &respResponse{Status: "completed"}
	}
	if r.Usage != nil {
		m.Usage = r.Usage.canonical()
	}
	m.Stop.API = p.api
	switch {
	case e.Type == "response.failed" || r.Status == "failed" || r.Status == "cancelled" || e.Type == "response.cancelled":
		code, msg := "", "response "+r.Status
		if r.Error != nil {
			code, msg = rawCode(r.Error.Code), r.Error.Message
		}
		m.Stop.Raw = r.Status
		b.Fail(p.upstreamErr("", code, msg))
	case e.Type == "response.incomplete" || r.Status == "incomplete":
		reason := ""
		if r.IncompleteDetails != nil {
			reason = r.IncompleteDetails.Reason
		}
		m.Stop.Raw = reason
		if reason == "content_filter" {
			m.Stop.Safety = true
			m.ErrorMessage = "upstream stopped with content_filter"
			b.Done(llm.StopError)
			return
		}
		b.Done(llm.StopLength)
	default:
		m.Stop.Raw = "completed"
		b.Done(llm.StopEnd)
	}
}

// thinkingItem returns an empty thinking block carrying a reasoning item id.
func thinkingItem(id string) llm.Content {
	c := llm.Content{Type: llm.ContentThinking}
	c.SetItemID(id)
	return c
}
