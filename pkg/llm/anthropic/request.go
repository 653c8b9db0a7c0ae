package anthropic

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/llm"
)

// ClaudeCodeInstruction is the identity system block Claude OAuth tokens
// require as the first system block.
const ClaudeCodeInstruction = "You are Claude Code, Anthropic's official CLI for Claude."

// oauthToolPrefix isolates custom tools from Claude Code's built-in tool
// names on OAuth requests; it is stripped from tool names on the way back.
const oauthToolPrefix = "_"

var builtinToolNames = map[string]bool{"web_search": true, "code_execution": true, "text_editor": true, "computer": true}

func wireToolName(name string, oauth bool) string {
	if !oauth || builtinToolNames[strings.ToLower(name)] {
		return name
	}
	return oauthToolPrefix + name
}

func canonicalToolName(name string, oauth bool) string {
	if oauth {
		return strings.TrimPrefix(name, oauthToolPrefix)
	}
	return name
}

// DefaultMaxTokens is used when neither the request nor the model gives
// an output limit (Anthropic requires max_tokens).
const DefaultMaxTokens = 8192

// encodeOptions tune EncodeRequest.
type encodeOptions struct {
	oauth  bool
	stream bool
}

// EncodeRequest appends the Messages request body for r, sent to model.
// It applies the cross-format translation rules (system hoisting,
// grouped tool results, id charset, thinking constraints, replay of
// Anthropic signatures only). oauth adds the Claude Code identity block
// and tool-name prefix.
func EncodeRequest(dst []byte, r *llm.Request, model llm.Model, oauth, stream bool) []byte {
	return encodeRequest(dst, r, model, encodeOptions{oauth: oauth, stream: stream})
}

func encodeRequest(dst []byte, r *llm.Request, model llm.Model, o encodeOptions) []byte {
	id := model.WireID()
	if id == "" {
		id = r.Model
	}
	maxTokens := r.MaxTokens
	if maxTokens <= 0 {
		maxTokens = model.MaxTokens
	}
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	extra := r.ExtraFor(llm.APIAnthropic)

	// Thinking.
	budget, adaptive := 0, false
	switch {
	case r.DisableReasoning:
	case r.AdaptiveThinking || (model.Thinking != nil && model.Thinking.Mode == "anthropic-adaptive" && r.Reasoning != llm.EffortNone):
		adaptive = true
	case r.ThinkingBudget > 0:
		budget = r.ThinkingBudget
	case r.Reasoning != llm.EffortNone && (model.Reasoning || model.ID == ""):
		budget = llm.ThinkingBudget(r.Reasoning)
	}
	if budget > 0 {
		budget = max(budget, 1024)
		if maxTokens <= budget {
			if maxTokens-1 >= 1024 {
				budget = maxTokens - 1
			} else {
				maxTokens = budget + 1024
			}
		}
	}
	thinking := budget > 0 || adaptive

	dst = append(dst, `{"model":`...)
	dst = jsonw.String(dst, id)
	dst = append(dst, `,"max_tokens":`...)
	dst = jsonw.Int(dst, int64(maxTokens))
	if o.stream {
		dst = append(dst, `,"stream":true`...)
	}
	dst = appendSystem(dst, r, o.oauth)
	dst = append(dst, `,"messages":`...)
	dst = appendMessages(dst, r.Messages, o.oauth)
	if len(r.Tools) > 0 {
		dst = appendTools(dst, r.Tools, o.oauth)
	}
	if tc := r.ToolChoice; tc.Mode != llm.ToolChoiceUnset || (r.ParallelToolCalls != nil && !*r.ParallelToolCalls) {
		mode := tc.Mode
		if thinking && (mode == llm.ToolChoiceRequired || mode == llm.ToolChoiceTool) {
			mode = llm.ToolChoiceAuto
		}
		dst = append(dst, `,"tool_choice":{"type":`...)
		switch mode {
		case llm.ToolChoiceNone:
			dst = append(dst, `"none"`...)
		case llm.ToolChoiceRequired:
			dst = append(dst, `"any"`...)
		case llm.ToolChoiceTool:
			dst = append(dst, `"tool","name":`...)
			dst = jsonw.String(dst, wireToolName(tc.Name, o.oauth))
		default:
			dst = append(dst, `"auto"`...)
		}
		if r.ParallelToolCalls != nil && !*r.ParallelToolCalls && mode != llm.ToolChoiceNone {
			dst = append(dst, `,"disable_parallel_tool_use":true`...)
		}
		dst = append(dst, '}')
	}
	switch {
	case r.DisableReasoning:
		dst = append(dst, `,"thinking":{"type":"disabled"}`...)
	case adaptive:
		dst = append(dst, `,"thinking":{"type":"adaptive"}`...)
		if _, ok := extra["output_config"]; !ok && r.Reasoning != llm.EffortNone {
			dst = append(dst, `,"output_config":{"effort":`...)
			e := r.Reasoning
			switch e {
			case llm.EffortMinimal:
				e = llm.EffortLow
			case llm.EffortXHigh:
				e = llm.EffortHigh
			}
			dst = jsonw.String(dst, string(e))
			dst = append(dst, '}')
		}
	case budget > 0:
		dst = append(dst, `,"thinking":{"type":"enabled","budget_tokens":`...)
		dst = jsonw.Int(dst, int64(budget))
		dst = append(dst, '}')
	}
	if r.Temperature != nil && !thinking {
		dst = append(dst, `,"temperature":`...)
		dst = jsonw.Float(dst, min(max(*r.Temperature, 0), 1))
	}
	if r.TopP != nil {
		p := *r.TopP
		if thinking {
			p = max(p, 0.95)
		}
		dst = append(dst, `,"top_p":`...)
		dst = jsonw.Float(dst, p)
	}
	if r.TopK != nil && !thinking {
		dst = append(dst, `,"top_k":`...)
		dst = jsonw.Int(dst, int64(*r.TopK))
	}
	if len(r.StopSequences) > 0 {
		dst = append(dst, `,"stop_sequences":[`...)
		for i, s := range r.StopSequences {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonw.String(dst, s)
		}
		dst = append(dst, ']')
	}
	if r.User != "" {
		dst = append(dst, `,"metadata":{"user_id":`...)
		dst = jsonw.String(dst, r.User)
		dst = append(dst, '}')
	}
	if r.ServiceTier == "auto" || r.ServiceTier == "standard_only" {
		dst = append(dst, `,"service_tier":`...)
		dst = jsonw.String(dst, r.ServiceTier)
	}
	if r.CacheControl != nil {
		dst = append(dst, `,"cache_control":`...)
		dst = appendCache(dst, r.CacheControl)
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		dst = append(dst, ',')
		dst = jsonw.String(dst, k)
		dst = append(dst, ':')
		dst = appendCompact(dst, extra[k])
	}
	return append(dst, '}')
}

// appendCompact appends raw JSON without insignificant newlines (so it can
// also go into an SSE data line).
func appendCompact(dst []byte, raw []byte) []byte {
	if !bytes.ContainsAny(raw, "\r\n") {
		return append(dst, raw...)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return append(dst, "null"...)
	}
	return append(dst, b.Bytes()...)
}

func appendCache(dst []byte, c *llm.CacheControl) []byte {
	dst = append(dst, `{"type":"ephemeral"`...)
	if c.TTL != "" {
		dst = append(dst, `,"ttl":`...)
		dst = jsonw.String(dst, c.TTL)
	}
	return append(dst, '}')
}

func countCacheMarkers(r *llm.Request) int {
	n := 0
	if r.CacheControl != nil {
		n++
	}
	for _, s := range r.System {
		if s.Cache != nil {
			n++
		}
	}
	for _, t := range r.Tools {
		if t.Cache != nil {
			n++
		}
	}
	for i := range r.Messages {
		if r.Messages[i].Cache != nil {
			n++
		}
		for j := range r.Messages[i].Content {
			if r.Messages[i].Content[j].Cache() != nil {
				n++
			}
		}
	}
	return n
}

func appendSystem(dst []byte, r *llm.Request, oauth bool) []byte {
	hasDeveloper := false
	for i := range r.Messages {
		if r.Messages[i].Role == llm.RoleDeveloper {
			hasDeveloper = true
			break
		}
	}
	injected := oauth && !(len(r.System) > 0 && strings.HasPrefix(r.System[0].Text, ClaudeCodeInstruction))
	if len(r.System) == 0 && !hasDeveloper && !injected {
		return dst
	}
	dst = append(dst, `,"system":[`...)
	n := 0
	block := func(text string, cache *llm.CacheControl) {
		if text == "" {
			return
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, `{"type":"text","text":`...)
		dst = jsonw.String(dst, text)
		if cache != nil {
			dst = append(dst, `,"cache_control":`...)
			dst = appendCache(dst, cache)
		}
		dst = append(dst, '}')
	}
	if injected {
		var cache *llm.CacheControl
		if countCacheMarkers(r) < 4 {
			cache = &llm.CacheControl{}
		}
		block(ClaudeCodeInstruction, cache)
	}
	for _, s := range r.System {
		block(s.Text, s.Cache)
	}
	// Developer messages are system text on this wire: hoisted in order.
	for i := range r.Messages {
		m := &r.Messages[i]
		if m.Role != llm.RoleDeveloper {
			continue
		}
		for j := range m.Content {
			if m.Content[j].Type == llm.ContentText {
				block(m.Content[j].Text, m.Content[j].Cache())
			}
		}
	}
	return append(dst, ']')
}

// SanitizeToolID rewrites a tool-call id to Anthropic's charset
// ^[a-zA-Z0-9_-]+$ deterministically, so a call and its result still match.
func SanitizeToolID(id string) string {
	ok := id != ""
	for i := 0; i < len(id) && ok; i++ {
		ok = isIDChar(id[i])
	}
	if ok {
		return id
	}
	if id == "" {
		return "toolu_empty"
	}
	b := []byte(id)
	for i, c := range b {
		if !isIDChar(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

func isIDChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
