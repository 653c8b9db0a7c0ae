package openai

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/ompgo/omp/internal/jsonr"
	"github.com/ompgo/omp/pkg/llm"
)

// chatChunk is one upstream chat.completion.chunk (only the fields read).
type chatChunk struct {
	ID      string            `json:"id"`
	Choices []chatChunkChoice `json:"choices"`
	Usage   *chatUsage        `json:"usage"`
	Error   json.RawMessage   `json:"error"`
}

type chatChunkChoice struct {
	Index        int       `json:"index"`
	Delta        chatDelta `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
}

type chatDelta struct {
	Content          *string         `json:"content"`
	ReasoningContent *string         `json:"reasoning_content"`
	Reasoning        *string         `json:"reasoning"`
	Refusal          *string         `json:"refusal"`
	ToolCalls        []chatToolDelta `json:"tool_calls"`
}

type chatToolDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
	Custom struct {
		Name  string `json:"name"`
		Input string `json:"input"`
	} `json:"custom"`
}

type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// canonical maps OC usage.
func (u *chatUsage) canonical() llm.Usage {
	var cached, reasoning int64
	if u.PromptTokensDetails != nil {
		cached = u.PromptTokensDetails.CachedTokens
	}
	if u.CompletionTokensDetails != nil {
		reasoning = u.CompletionTokensDetails.ReasoningTokens
	}
	return llm.Usage{Input: max(u.PromptTokens-cached, 0), CacheRead: cached, Output: u.CompletionTokens, Reasoning: reasoning}
}

// pendingCall is a tool call whose fragments arrive while an earlier call
// is still open (invariant 3: one open block at a time).
type pendingCall struct {
	index      int
	id, name   string
	args       []byte
	custom     bool
	started    bool // streamed live (it is or was the open block)
	contentIdx int
}

// chatParser turns upstream chunks into canonical events.
type chatParser struct {
	b      *llm.Builder
	chunk  chatChunk
	fast   chatFast
	noFast bool           // tests: decode every chunk with encoding/json
	calls  []*pendingCall // by arrival order
	open   *pendingCall   // the call streaming live
	finish string         // finish_reason seen
	idBase string
}

func newChatParser(b *llm.Builder) *chatParser { return &chatParser{b: b} }

// chatStopReason maps an OC finish_reason and
// records the raw value on the message.
func chatStopReason(m *llm.Message, finish string) llm.StopReason {
	m.Stop.Raw, m.Stop.API = finish, llm.APIOpenAIChat
	switch finish {
	case "length":
		return llm.StopLength
	case "tool_calls", "function_call":
		return llm.StopToolUse
	case "content_filter":
		m.Stop.Safety = true
		m.ErrorMessage = "upstream stopped with content_filter"
		return llm.StopError
	}
	return llm.StopEnd
}

// handle processes one data payload; it returns false once the stream is
// over (terminal event emitted or consumer gone).
func (p *chatParser) handle(data []byte) bool {
	b := p.b
	if string(data) == "[DONE]" {
		p.end()
		return false
	}
	c := &p.chunk
	if p.noFast || !p.fast.decode(data, c) {
		*c = chatChunk{} // never reuse: encoding/json keeps stale fields in reused slice elements
		if err := json.Unmarshal(data, c); err != nil {
			b.Fail(&llm.UpstreamError{Provider: b.Message().Provider, Status: 200, Message: "malformed stream chunk", Err: err})
			return false
		}
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		ue := parseErrorBody(data)
		ue.Provider, ue.Status = b.Message().Provider, 200
		b.Fail(ue)
		return false
	}
	if !b.Start() {
		return false
	}
	if c.ID != "" && b.Message().ResponseID == "" {
		id := strings.Clone(c.ID) // c's strings die with the chunk
		b.Message().ResponseID = id
		p.idBase = id
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // the canonical stream has one choice
		}
		d := &ch.Delta
		// Buffered tool calls are flushed before text so blocks keep
		// their arrival order.
		if s := firstNonEmpty(d.ReasoningContent, d.Reasoning); s != "" {
			if !p.flushCalls() || !b.Thinking(s) {
				return false
			}
		}
		if s := firstNonEmpty(d.Content, d.Refusal); s != "" {
			if !p.flushCalls() || !b.Text(s) {
				return false
			}
		}
		for j := range d.ToolCalls {
			if !p.toolDelta(&d.ToolCalls[j], j) {
				return false
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			p.finish = strings.Clone(*ch.FinishReason)
			if !p.flushCalls() {
				return false
			}
		}
	}
	if c.Usage != nil {
		u := c.Usage.canonical()
		b.Message().Usage = u
	}
	return !b.Ended()
}

func firstNonEmpty(a, b *string) string {
	if a != nil && *a != "" {
		return *a
	}
	if b != nil {
		return *b
	}
	return ""
}

func (p *chatParser) find(index int) *pendingCall {
	for _, c := range p.calls {
		if c.index == index {
			return c
		}
	}
	return nil
}

func (p *chatParser) toolDelta(td *chatToolDelta, pos int) bool {
	b := p.b
	index := pos
	if td.Index != nil {
		index = *td.Index
	}
	name, args := td.Function.Name, td.Function.Arguments
	custom := td.Type == "custom"
	if custom || td.Custom.Name != "" || td.Custom.Input != "" {
		custom = true
		name, args = td.Custom.Name, td.Custom.Input
	}
	pc := p.find(index)
	if pc == nil {
		pc = &pendingCall{index: index}
		p.calls = append(p.calls, pc)
	}
	if td.ID != "" && pc.id == "" {
		pc.id = strings.Clone(td.ID)
	}
	if name != "" && pc.name == "" {
		pc.name = strings.Clone(name)
	}
	pc.custom = pc.custom || custom
	if pc.started {
		if pc != p.open {
			return !b.Ended() // a late fragment of an ended call: dropped
		}
		blk := b.Open()
		if blk.ID == "" {
			blk.ID = pc.id
		}
		if blk.Name == "" {
			blk.Name = pc.name
		}
		return b.ToolArgs(args)
	}
	pc.args = append(pc.args, args...)
	// Switch to this call when nothing is streaming, or when the open
	// call's arguments already form a complete JSON object.
	if p.open == nil || jsonr.ValidString(b.Open().ArgumentsText) {
		return p.startCall(pc)
	}
	return !b.Ended()
}

func (p *chatParser) startCall(pc *pendingCall) bool {
	b := p.b
	if pc.id == "" {
		pc.id = "call_" + sanitizeID(p.idBase) + "_" + strconv.Itoa(pc.index)
	}
	pc.started = true
	p.open = pc
	if !b.StartToolCall(pc.id, pc.name) {
		return false
	}
	pc.contentIdx = len(b.Message().Content) - 1
	if pc.custom {
		b.Open().SetCustomWireName(pc.name)
	}
	args := pc.args
	pc.args = nil
	return b.ToolArgs(string(args))
}

// flushCalls ends the open call and streams every buffered one, in
// index order.
func (p *chatParser) flushCalls() bool {
	var waiting []*pendingCall
	for _, c := range p.calls {
		if !c.started {
			waiting = append(waiting, c)
		}
	}
	slices.SortFunc(waiting, func(a, b *pendingCall) int { return a.index - b.index })
	for _, c := range waiting {
		if !p.startCall(c) {
			return false
		}
	}
	if p.open != nil {
		p.open = nil
		return p.b.EndBlock()
	}
	return !p.b.Ended()
}

// end finishes the turn at [DONE] or at a clean EOF after finish_reason.
func (p *chatParser) end() {
	if !p.flushCalls() {
		return
	}
	p.b.Done(chatStopReason(p.b.Message(), p.finish))
}

// sanitizeID keeps [A-Za-z0-9_-] of s (at most 24 bytes).
func sanitizeID(s string) string {
	out := make([]byte, 0, 24)
	for i := 0; i < len(s) && len(out) < 24; i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return "x"
	}
	return string(out)
}
