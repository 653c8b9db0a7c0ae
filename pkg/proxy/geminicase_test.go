package proxy_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

// Bodies in the snake_case spelling of Google's curl examples are served
// as their camelCase twins: 200, the answer in Google's shape, and the
// fields reach the upstream.
func TestGeminiSnakeCaseBodies(t *testing.T) {
	up := anthropicOK(t)
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "anthropic", "sk-ant-vault")}}
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil)
	base := gw.URL + "/v1beta/models/claude-sonnet-4-5"

	for _, tc := range []struct {
		name, body string
		upstream   []string // what the upstream's Anthropic body holds
	}{
		{"system instruction and generation config", `{
  "system_instruction": {"parts": [{"text": "You are a cat. Your name is Neko."}]},
  "contents": [{"parts": [{"text": "Hello there"}]}],
  "generation_config": {"stop_sequences": ["Title"], "temperature": 1.0, "max_output_tokens": 800, "top_p": 0.8, "top_k": 10}
}`, []string{`Your name is Neko.`, `"max_tokens":800`, `"stop_sequences":["Title"]`, `"top_k":10`}},
		{"inline image", `{
  "contents": [{"parts": [
    {"inline_data": {"mime_type": "image/jpeg", "data": "/9j/4AAQSkZJRg=="}},
    {"text": "Caption this image."}]}]
}`, []string{`"media_type":"image/jpeg"`, `"data":"/9j/4AAQSkZJRg=="`}},
		{"function calling", `{
  "contents": [{"role": "user", "parts": [{"text": "Schedule a meeting with Bob and Alice for 03/27/2025 at 10:00 AM about the Q3 planning."}]}],
  "tools": [{"function_declarations": [{"name": "schedule_meeting", "description": "Schedules a meeting.",
    "parameters": {"type": "object", "properties": {"attendees": {"type": "array", "items": {"type": "string"}}, "meeting_date": {"type": "string"}}, "required": ["attendees", "meeting_date"]}}]}],
  "tool_config": {"function_calling_config": {"mode": "ANY", "allowed_function_names": ["schedule_meeting"]}}
}`, []string{`"name":"schedule_meeting"`, `"meeting_date"`, `"tool_choice":{"type":"tool","name":"schedule_meeting"}`}},
		{"thinking config", `{
  "contents": [{"parts": [{"text": "Explain the Occam's Razor concept."}]}],
  "generation_config": {"thinking_config": {"thinking_budget": 2048, "include_thoughts": true}}
}`, []string{`"budget_tokens":2048`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := geminiDo(t, http.MethodPost, base+":generateContent", "x-goog-api-key", tc.body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			var r struct {
				Candidates []struct {
					Content struct {
						Parts []struct {
							Text string `json:"text"`
						} `json:"parts"`
					} `json:"content"`
					FinishReason string `json:"finishReason"`
				} `json:"candidates"`
			}
			if err := json.Unmarshal([]byte(body), &r); err != nil {
				t.Fatal(err)
			}
			if len(r.Candidates) != 1 || r.Candidates[0].Content.Parts[0].Text != "Hello world" || r.Candidates[0].FinishReason != "STOP" {
				t.Errorf("answer %s", body)
			}
			up.mu.Lock()
			sent := up.bodies[len(up.bodies)-1]
			up.mu.Unlock()
			for _, want := range tc.upstream {
				if !strings.Contains(sent, want) {
					t.Errorf("upstream body lacks %s:\n%s", want, sent)
				}
			}
		})
	}

	t.Run("countTokens with generate_content_request", func(t *testing.T) {
		resp, body := geminiDo(t, http.MethodPost, base+":countTokens", "key",
			`{"generate_content_request": {"model": "models/claude-sonnet-4-5", "contents": [{"parts": [{"text": "0123456789abcdef"}]}]}}`)
		if resp.StatusCode != 200 || body != `{"totalTokens":4}` {
			t.Errorf("status %d: %s", resp.StatusCode, body)
		}
	})

	t.Run("both spellings of one field", func(t *testing.T) {
		resp, body := geminiDo(t, http.MethodPost, base+":generateContent", "key",
			`{"contents": [{"parts": [{"text": "hi"}]}], "generation_config": {"max_output_tokens": 10, "maxOutputTokens": 20}}`)
		if resp.StatusCode != 400 || !strings.Contains(body, `"status":"INVALID_ARGUMENT"`) ||
			!strings.Contains(body, `generationConfig: \"max_output_tokens\" and \"maxOutputTokens\" are the same field`) {
			t.Errorf("status %d: %s", resp.StatusCode, body)
		}
	})
}
