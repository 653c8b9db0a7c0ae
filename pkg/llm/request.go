package llm

import "encoding/json"

// API names a wire protocol. The values are the reference's `api` strings.
const (
	APIAnthropic       = "anthropic-messages"
	APIOpenAIChat      = "openai-completions"
	APIOpenAIResponses = "openai-responses"
	APICodex           = "openai-codex-responses"
	APIGoogle          = "google-generative-ai"
	APIGeminiCLI       = "google-gemini-cli"
	APIPi              = "pi-native"
)

// Effort is a canonical reasoning effort level.
type Effort string

// Reasoning efforts. EffortNone is the unset value.
const (
	EffortNone    Effort = ""
	EffortMinimal Effort = "minimal"
	EffortLow     Effort = "low"
	EffortMedium  Effort = "medium"
	EffortHigh    Effort = "high"
	EffortXHigh   Effort = "xhigh"
)

// Valid reports whether e is unset or one of the known levels.
func (e Effort) Valid() bool {
	switch e {
	case EffortNone, EffortMinimal, EffortLow, EffortMedium, EffortHigh, EffortXHigh:
		return true
	}
	return false
}

// ToolChoiceMode says how the model may use tools.
type ToolChoiceMode string

// Tool choice modes. ToolChoiceUnset leaves the provider default.
const (
	ToolChoiceUnset    ToolChoiceMode = ""
	ToolChoiceAuto     ToolChoiceMode = "auto"
	ToolChoiceNone     ToolChoiceMode = "none"
	ToolChoiceRequired ToolChoiceMode = "required"
	// ToolChoiceTool forces the tool named by ToolChoice.Name.
	ToolChoiceTool ToolChoiceMode = "tool"
)

// ToolChoice is the canonical tool choice.
type ToolChoice struct {
	Mode ToolChoiceMode
	// Name is the forced tool when Mode is ToolChoiceTool.
	Name string
}

// Tool is a tool definition offered to the model.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments, passed through
	// unchanged (nil means an empty object schema).
	Parameters json.RawMessage
	// Strict asks for strict schema adherence where supported (nil = unset).
	Strict *bool
	// Custom marks an OpenAI freeform ("custom") tool; CustomFormat is its
	// raw format object and CustomWireName its wire name.
	Custom         bool
	CustomFormat   json.RawMessage
	CustomWireName string
	// Native is a provider-typed tool definition (e.g. Anthropic
	// web_search_20250305) kept verbatim; only the API in NativeAPI can
	// send it, every other family drops the tool.
	Native    json.RawMessage
	NativeAPI string
	// Cache is an optional prompt-cache breakpoint.
	Cache *CacheControl
}

// SystemBlock is one system-prompt block, in order.
type SystemBlock struct {
	Text  string
	Cache *CacheControl
}

// Request is the canonical model request. Pointer
// and zero-valued fields mean "unset: use the provider default".
type Request struct {
	// Model is the model id the client sent.
	Model    string
	System   []SystemBlock
	Messages []Message
	Tools    []Tool

	// MaxTokens is the output token limit (0 = unset; adapters that need
	// one use the model's catalog MaxTokens).
	MaxTokens   int
	Temperature *float64
	TopP        *float64
	TopK        *int
	// StopSequences are strings that end generation.
	StopSequences []string
	ToolChoice    ToolChoice
	// ParallelToolCalls is nil when unset.
	ParallelToolCalls *bool

	// Reasoning is the requested effort (EffortNone = provider default).
	Reasoning Effort
	// DisableReasoning asks for thinking off where the model allows it.
	DisableReasoning bool
	// ThinkingBudget is an explicit thinking budget in tokens (0 = unset).
	ThinkingBudget int
	// AdaptiveThinking asks for Anthropic adaptive thinking.
	AdaptiveThinking bool
	// HideThinkingSummary asks for no reasoning summary.
	HideThinkingSummary bool

	// ServiceTier is "auto", "default", "flex", "scale" or "priority".
	ServiceTier string
	// PromptCacheKey is the prompt-cache / session key sent upstream.
	PromptCacheKey string
	// SessionID is the caller's session id (credential stickiness).
	SessionID string
	// User is an end-user id (OpenAI user, Anthropic metadata.user_id).
	User string
	// Metadata is a string map forwarded where the upstream accepts one.
	Metadata map[string]string
	// PreviousResponseID chains a Responses conversation.
	PreviousResponseID string
	// Headers are allow-listed passthrough headers for the upstream
	// (e.g. anthropic-beta; only same-family adapters send them).
	Headers map[string]string
	// IncludeStreamingUsage is the Chat stream_options.include_usage flag.
	IncludeStreamingUsage bool
	// CacheControl is a top-level automatic-caching marker (Anthropic).
	CacheControl *CacheControl

	// Stream is true when the client asked for a stream.
	Stream bool

	// OriginAPI is the wire family the request was decoded from ("" when
	// built in-process). Extra holds that family's request fields that
	// have no canonical slot, raw; adapters of the same family forward them
	// unchanged and every other family ignores them.
	OriginAPI string
	Extra     map[string]json.RawMessage

	// Session is the client session's provider state (fallbacks learned
	// by earlier requests of the session); nil: none is kept.
	Session *SessionState
}

// ExtraFor returns r.Extra when the request came from api, else nil.
func (r *Request) ExtraFor(api string) map[string]json.RawMessage {
	if r.OriginAPI != api {
		return nil
	}
	return r.Extra
}
