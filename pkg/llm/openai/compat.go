package openai

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/ompgo/omp/pkg/llm"
)

// ChatCompat holds the switches that adapt the Chat Completions request to
// an OpenAI-compatible server (Ollama, vLLM, llama.cpp, LiteLLM,
// OpenRouter, …). ResolveChatCompat derives the defaults from the base URL
// and overlays the model's models.yml `compat` object.
type ChatCompat struct {
	// DeveloperRole sends system prompts of reasoning models with the
	// "developer" role (official OpenAI only by default).
	DeveloperRole bool
	// MultipleSystemMessages keeps each system block as its own message;
	// false joins them with "\n\n" (default true).
	MultipleSystemMessages bool
	// MaxTokensField is "max_completion_tokens" (OpenAI) or "max_tokens"
	// (the default for other servers).
	MaxTokensField string
	// UsageInStreaming sends stream_options.include_usage (default true).
	UsageInStreaming bool
	// ReasoningEffort sends reasoning_effort for reasoning models
	// (default true).
	ReasoningEffort bool
	// StrictMode forwards a tool's strict flag (default: official only).
	StrictMode bool
	// PromptCacheKey sends prompt_cache_key (default: official only).
	PromptCacheKey bool
	// ReasoningContentField replays assistant thinking in this message
	// field ("reasoning_content" or "reasoning"; "" = not replayed).
	ReasoningContentField string
	// ToolResultName adds "name" to tool messages (some servers need it).
	ToolResultName bool
	// AssistantAfterToolResult inserts a short assistant message between
	// a tool result and a following user message (Mistral-style servers).
	AssistantAfterToolResult bool
	// CustomTools sends freeform tools as Chat custom tools; when false
	// they are dropped (default: official only).
	CustomTools bool
}

// compatJSON is the models.yml compat object (reference names).
type compatJSON struct {
	SupportsDeveloperRole            *bool  `json:"supportsDeveloperRole"`
	SupportsMultipleSystemMessages   *bool  `json:"supportsMultipleSystemMessages"`
	MaxTokensField                   string `json:"maxTokensField"`
	SupportsUsageInStreaming         *bool  `json:"supportsUsageInStreaming"`
	SupportsReasoningEffort          *bool  `json:"supportsReasoningEffort"`
	SupportsStrictMode               *bool  `json:"supportsStrictMode"`
	SupportsPromptCacheKey           *bool  `json:"supportsPromptCacheKey"`
	ReasoningContentField            string `json:"reasoningContentField"`
	RequiresToolResultName           *bool  `json:"requiresToolResultName"`
	RequiresAssistantAfterToolResult *bool  `json:"requiresAssistantAfterToolResult"`
}

// isOfficialOpenAI reports whether baseURL is api.openai.com (or empty,
// meaning the default).
func isOfficialOpenAI(baseURL string) bool {
	if baseURL == "" {
		return true
	}
	u, err := url.Parse(baseURL)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

// ResolveChatCompat returns the compat switches for model served at
// baseURL. An unparsable compat object is ignored (defaults apply).
func ResolveChatCompat(model llm.Model, baseURL string) ChatCompat {
	official := isOfficialOpenAI(baseURL)
	c := ChatCompat{
		DeveloperRole:          official,
		MultipleSystemMessages: true,
		MaxTokensField:         "max_tokens",
		UsageInStreaming:       true,
		ReasoningEffort:        true,
		StrictMode:             official,
		PromptCacheKey:         official,
		CustomTools:            official,
	}
	if official {
		c.MaxTokensField = "max_completion_tokens"
	}
	if len(model.Compat) == 0 {
		return c
	}
	var j compatJSON
	if json.Unmarshal(model.Compat, &j) != nil {
		return c
	}
	set := func(dst *bool, v *bool) {
		if v != nil {
			*dst = *v
		}
	}
	set(&c.DeveloperRole, j.SupportsDeveloperRole)
	set(&c.MultipleSystemMessages, j.SupportsMultipleSystemMessages)
	set(&c.UsageInStreaming, j.SupportsUsageInStreaming)
	set(&c.ReasoningEffort, j.SupportsReasoningEffort)
	set(&c.StrictMode, j.SupportsStrictMode)
	set(&c.PromptCacheKey, j.SupportsPromptCacheKey)
	set(&c.ToolResultName, j.RequiresToolResultName)
	set(&c.AssistantAfterToolResult, j.RequiresAssistantAfterToolResult)
	if j.MaxTokensField == "max_tokens" || j.MaxTokensField == "max_completion_tokens" {
		c.MaxTokensField = j.MaxTokensField
	}
	if j.ReasoningContentField == "reasoning_content" || j.ReasoningContentField == "reasoning" {
		c.ReasoningContentField = j.ReasoningContentField
	}
	return c
}

// wireEffort returns the OpenAI effort for req on model ("" = omit).
// minimalOK is false for upstreams that reject "minimal" (Codex).
func wireEffort(req *llm.Request, model llm.Model, minimalOK bool) string {
	if req.DisableReasoning || !model.Reasoning {
		return ""
	}
	e := req.Reasoning
	if e == llm.EffortNone && req.ThinkingBudget != 0 {
		e = llm.EffortForBudget(req.ThinkingBudget)
	}
	switch e {
	case llm.EffortNone:
		return ""
	case llm.EffortMinimal:
		if !minimalOK {
			return "low"
		}
	case llm.EffortXHigh:
		if model.Thinking != nil && len(model.Thinking.Efforts) > 0 {
			supported := false
			for _, x := range model.Thinking.Efforts {
				supported = supported || x == llm.EffortXHigh
			}
			if !supported {
				return "high"
			}
		}
	}
	return string(e)
}
