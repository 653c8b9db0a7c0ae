package llm

// Role is the author of a Message.
type Role string

// Message roles (pi-native names).
const (
	RoleUser       Role = "user"
	RoleDeveloper  Role = "developer"
	RoleAssistant  Role = "assistant"
	RoleToolResult Role = "toolResult"
)

// StopReason is the canonical end of an assistant turn.
type StopReason string

// Stop reasons.
const (
	StopEnd     StopReason = "stop"
	StopLength  StopReason = "length"
	StopToolUse StopReason = "toolUse"
	StopError   StopReason = "error"
	StopAborted StopReason = "aborted"
)

// IsTerminalSuccess reports whether r ends a turn with a done event.
func (r StopReason) IsTerminalSuccess() bool {
	return r == StopEnd || r == StopLength || r == StopToolUse
}

// Message is one conversation message. User, developer and tool-result
// messages carry text and image blocks; assistant messages carry text,
// thinking, redacted-thinking, tool-call and native blocks and, when they
// come out of a Provider, the response metadata below.
type Message struct {
	Role    Role
	Content []Content

	// ToolCallID and ToolName identify the call a RoleToolResult answers.
	ToolCallID string
	ToolName   string
	// IsError marks a failed tool result.
	IsError bool
	// Cache is a prompt-cache breakpoint on the whole message (Anthropic
	// tool_result cache_control); block-level markers live on Content.
	Cache *CacheControl

	// Timestamp is Unix milliseconds (0 when unknown).
	Timestamp int64

	// Assistant response metadata.

	// API is the wire API that produced the message (APIAnthropic, …).
	API string
	// Provider is the catalog provider id ("anthropic", "openai-codex", …).
	Provider string
	// Model is the model id the provider reported or was asked for.
	Model string
	// ResponseID is the provider's message / response id, when known.
	ResponseID string
	// Usage is the token accounting of the turn.
	Usage Usage
	// StopReason is set when the turn has ended.
	StopReason StopReason
	// Stop holds the raw upstream stop detail.
	Stop StopDetail
	// ErrorMessage is set when StopReason is StopError or StopAborted.
	ErrorMessage string
	// ErrorStatus is the upstream HTTP status of a failed turn, when known.
	ErrorStatus int
}

// StopDetail keeps what the three-valued StopReason cannot say, so inbound
// encoders can pass same-family values through and map the safety class.
type StopDetail struct {
	// Raw is the upstream's own stop value ("refusal", "pause_turn",
	// "content_filter", "SAFETY", "max_output_tokens", …).
	Raw string
	// API is the upstream wire family Raw belongs to.
	API string
	// Sequence is the stop sequence that matched, if any.
	Sequence string
	// Safety marks the safety class: canonically an error, but a normal
	// completion (refusal / content_filter) on the A, C and R wires.
	Safety bool
}

// Usage is the token accounting of one turn.
type Usage struct {
	// Input is uncached input tokens.
	Input int64
	// Output is output tokens, reasoning included.
	Output int64
	// CacheRead is input tokens served from the prompt cache.
	CacheRead int64
	// CacheWrite is input tokens written to the prompt cache.
	CacheWrite int64
	// Reasoning is the part of Output spent on reasoning (0 when unknown).
	Reasoning int64
	// Cost is the price of the turn in US dollars, when the model's
	// price is known.
	Cost Cost
}

// Total returns Input + CacheRead + CacheWrite + Output.
func (u Usage) Total() int64 { return u.Input + u.CacheRead + u.CacheWrite + u.Output }

// PromptTotal returns all input tokens, cached ones included (the OpenAI
// prompt_tokens / input_tokens encoding).
func (u Usage) PromptTotal() int64 { return u.Input + u.CacheRead + u.CacheWrite }

// Cost is a price breakdown in US dollars.
type Cost struct {
	Input, Output, CacheRead, CacheWrite, Total float64
}

// WithCost returns u with Cost computed from the per-million-token prices p.
func (u Usage) WithCost(p Price) Usage {
	const m = 1e6
	u.Cost = Cost{
		Input:      float64(u.Input) * p.Input / m,
		Output:     float64(u.Output) * p.Output / m,
		CacheRead:  float64(u.CacheRead) * p.CacheRead / m,
		CacheWrite: float64(u.CacheWrite) * p.CacheWrite / m,
	}
	u.Cost.Total = u.Cost.Input + u.Cost.Output + u.Cost.CacheRead + u.Cost.CacheWrite
	return u
}

// HasToolCall reports whether m contains a tool-call block.
func (m *Message) HasToolCall() bool {
	for i := range m.Content {
		if m.Content[i].Type == ContentToolCall {
			return true
		}
	}
	return false
}

// TextContent returns the concatenation of m's text blocks.
func (m *Message) TextContent() string {
	var n int
	var only string
	for i := range m.Content {
		if m.Content[i].Type == ContentText {
			n++
			only = m.Content[i].Text
		}
	}
	if n <= 1 {
		return only
	}
	var b []byte
	for i := range m.Content {
		if m.Content[i].Type == ContentText {
			b = append(b, m.Content[i].Text...)
		}
	}
	return string(b)
}
