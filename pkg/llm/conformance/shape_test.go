package conformance

import (
	"encoding/json"
	"slices"
	"testing"
)

// checkShape checks the non-streaming answer of a scenario against the
// scripted turn, independently of the goldens: the block kinds in order
// (no empty message item from Gemini's trailing {"text":""}) and the usage
// arithmetic (input, cache read and cache write add up to each format's
// totals).
func checkShape(t *testing.T, in string, up upstream, tn turn, body []byte) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	// Canonical usage as the upstream reported it: only Anthropic has
	// cache writes, and Anthropic does not report reasoning separately.
	u := tn.usage
	cw, reasoning := 0, u.reasoning
	if up.name == "anthropic" {
		cw, reasoning = u.cacheWrite, 0
	}
	f := func(v any) int { n, _ := num(v); return n }
	var kinds []string
	calls := len(tn.calls)
	switch in {
	case "messages":
		for _, c := range m["content"].([]any) {
			kinds = append(kinds, c.(map[string]any)["type"].(string))
		}
		want := append([]string{"thinking", "text"}, slices.Repeat([]string{"tool_use"}, calls)...)
		if !slices.Equal(kinds, want) {
			t.Errorf("content %v, want %v", kinds, want)
		}
		us := m["usage"].(map[string]any)
		if f(us["input_tokens"]) != u.input || f(us["cache_read_input_tokens"]) != u.cacheRead ||
			f(us["cache_creation_input_tokens"]) != cw || f(us["output_tokens"]) != u.output {
			t.Errorf("usage %v", us)
		}
	case "chat":
		msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
		tcs, _ := msg["tool_calls"].([]any)
		if msg["content"] == nil || msg["reasoning_content"] == nil || len(tcs) != calls {
			t.Errorf("message %v", msg)
		}
		us := m["usage"].(map[string]any)
		prompt := u.input + u.cacheRead + cw
		details, _ := us["completion_tokens_details"].(map[string]any)
		if f(us["prompt_tokens"]) != prompt || f(us["completion_tokens"]) != u.output || f(us["total_tokens"]) != prompt+u.output ||
			f(us["prompt_tokens_details"].(map[string]any)["cached_tokens"]) != u.cacheRead || f(details["reasoning_tokens"]) != reasoning {
			t.Errorf("usage %v", us)
		}
	case "responses":
		for _, o := range m["output"].([]any) {
			kinds = append(kinds, o.(map[string]any)["type"].(string))
		}
		want := append([]string{"reasoning", "message"}, slices.Repeat([]string{"function_call"}, calls)...)
		if !slices.Equal(kinds, want) {
			t.Errorf("output %v, want %v", kinds, want)
		}
		us := m["usage"].(map[string]any)
		input := u.input + u.cacheRead + cw
		if f(us["input_tokens"]) != input || f(us["output_tokens"]) != u.output || f(us["total_tokens"]) != input+u.output ||
			f(us["input_tokens_details"].(map[string]any)["cached_tokens"]) != u.cacheRead ||
			f(us["output_tokens_details"].(map[string]any)["reasoning_tokens"]) != reasoning {
			t.Errorf("usage %v", us)
		}
	case "pi":
		msg := m["message"].(map[string]any)
		for _, c := range msg["content"].([]any) {
			kinds = append(kinds, c.(map[string]any)["type"].(string))
		}
		want := append([]string{"thinking", "text"}, slices.Repeat([]string{"toolCall"}, calls)...)
		if !slices.Equal(kinds, want) {
			t.Errorf("content %v, want %v", kinds, want)
		}
		us := msg["usage"].(map[string]any)
		if f(us["input"]) != u.input || f(us["cacheRead"]) != u.cacheRead || f(us["cacheWrite"]) != cw || f(us["output"]) != u.output ||
			f(us["totalTokens"]) != u.input+u.cacheRead+cw+u.output || f(us["reasoningTokens"]) != reasoning {
			t.Errorf("usage %v", us)
		}
		if msg["api"] != up.model.API || msg["provider"] != up.model.Provider {
			t.Errorf("message api/provider %v/%v", msg["api"], msg["provider"])
		}
	}
}
