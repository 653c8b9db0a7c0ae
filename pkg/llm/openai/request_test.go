package openai

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// indent pretty-prints a JSON body for a readable golden; it also proves
// the body is valid JSON.
func indent(t *testing.T, body []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, body, "", " "); err != nil {
		t.Fatalf("invalid JSON body: %v\n%s", err, body)
	}
	b.WriteByte('\n')
	return b.Bytes()
}

func TestRequestTranslationMatchesGoldens(t *testing.T) {
	openaiModel := llm.Model{ID: "gpt-5", Provider: "openai", Reasoning: true}
	ollama := llm.Model{ID: "qwen3", Provider: "ollama", Reasoning: true, Compat: json.RawMessage(`{"supportsDeveloperRole":false,"reasoningContentField":"reasoning_content","requiresToolResultName":true}`)}
	for _, in := range []struct {
		fixture string
		decode  func([]byte) (*llm.Request, error)
	}{
		{"request_chat.json", DecodeChatRequest},
		{"request_responses.json", DecodeResponsesRequest},
	} {
		req, err := in.decode(readFixture(t, in.fixture))
		if err != nil {
			t.Fatalf("%s: %v", in.fixture, err)
		}
		base := strings.TrimSuffix(in.fixture, ".json")
		llmtest.GoldenExact(t, base+".to_chat_openai.json", indent(t, AppendChatBody(nil, req, openaiModel, ResolveChatCompat(openaiModel, ""))))
		llmtest.GoldenExact(t, base+".to_chat_ollama.json", indent(t, AppendChatBody(nil, req, ollama, ResolveChatCompat(ollama, "http://localhost:11434/v1"))))
		llmtest.GoldenExact(t, base+".to_responses.json", indent(t, AppendResponsesBody(nil, req, openaiModel)))
		llmtest.GoldenExact(t, base+".to_codex.json", indent(t, AppendCodexBody(nil, req, openaiModel)))
	}
}

func TestDecodeChatRequestMapsFields(t *testing.T) {
	req, err := DecodeChatRequest(readFixture(t, "request_chat.json"))
	if err != nil {
		t.Fatal(err)
	}
	if req.MaxTokens != 2048 {
		t.Errorf("max_completion_tokens must beat max_tokens: %d", req.MaxTokens)
	}
	if req.Reasoning != llm.EffortMinimal || req.ToolChoice != (llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "get_weather"}) {
		t.Errorf("effort/tool choice = %v %v", req.Reasoning, req.ToolChoice)
	}
	if len(req.StopSequences) != 1 || req.StopSequences[0] != "END" || !req.IncludeStreamingUsage || !req.Stream {
		t.Errorf("stop/stream = %v %v %v", req.StopSequences, req.IncludeStreamingUsage, req.Stream)
	}
	tool := req.Messages[3]
	if tool.Role != llm.RoleToolResult || tool.ToolName != "get_weather" || tool.ToolCallID != "call_1" {
		t.Errorf("tool result = %+v", tool)
	}
	asst := req.Messages[2]
	if len(asst.Content) != 3 || asst.Content[0].Type != llm.ContentThinking || string(asst.Content[2].Arguments) != "{}" {
		t.Errorf("assistant = %+v", asst.Content)
	}
	img := req.Messages[1].Content[1]
	if img.MimeType != "image/png" || img.Data != "iVBORw0KGgo=" || img.Detail() != "low" || req.Messages[1].Content[2].URL() != "https://example.com/cat.png" {
		t.Errorf("images = %+v", req.Messages[1].Content)
	}
	for _, k := range []string{"response_format", "seed", "n"} {
		if _, ok := req.Extra[k]; !ok {
			t.Errorf("extra %q not kept", k)
		}
	}
}

func TestDecodersRejectBadBodies(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"syntax", `{"model":`, "Invalid JSON body: "},
		{"not an object", `[1]`, "Invalid JSON body: "},
		{"missing model", `{"messages":[]}`, "Missing top-level `model` field"},
		{"model not a string", `{"model":5,"messages":[]}`, "openai-chat: "},
		{"bad role", `{"model":"m","messages":[{"role":"wizard","content":"x"}]}`, "openai-chat: messages[0].role"},
		{"bad effort", `{"model":"m","messages":[],"reasoning_effort":"max"}`, "openai-chat: unsupported reasoning effort"},
		{"messages wrong type", `{"model":"m","messages":{}}`, "openai-chat: "},
	}
	for _, tc := range cases {
		t.Run("chat "+tc.name, func(t *testing.T) {
			_, err := DecodeChatRequest([]byte(tc.body))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v, want prefix %q", err, tc.want)
			}
		})
	}
	rcases := []struct{ name, body, want string }{
		{"bad arguments", `{"model":"m","input":[{"type":"function_call","call_id":"c1","name":"f","arguments":"{oops"}]}`, "openai-responses: function_call c1 has invalid JSON arguments"},
		{"bad role", `{"model":"m","input":[{"role":"robot","content":"x"}]}`, "openai-responses: input[0].role"},
		{"missing model", `{"input":"hi"}`, "Missing top-level `model` field"},
	}
	for _, tc := range rcases {
		t.Run("responses "+tc.name, func(t *testing.T) {
			_, err := DecodeResponsesRequest([]byte(tc.body))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v, want prefix %q", err, tc.want)
			}
		})
	}
}

func TestCodexBodyObeysBackendRules(t *testing.T) {
	req, err := DecodeChatRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.5,"top_p":0.1,"max_tokens":99,"user":"u","reasoning_effort":"minimal","service_tier":"flex","safety_identifier":"s"}`))
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(AppendCodexBody(nil, req, llm.Model{ID: "gpt-5", Reasoning: true}), &body); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"stream": "true", "store": "false", "instructions": `""`, "include": `["reasoning.encrypted_content"]`, "reasoning": `{"effort":"low","summary":"auto"}`} {
		if string(body[k]) != want {
			t.Errorf("%s = %s, want %s", k, body[k], want)
		}
	}
	for _, k := range []string{"temperature", "top_p", "max_output_tokens", "user", "service_tier", "safety_identifier"} {
		if _, ok := body[k]; ok {
			t.Errorf("%s must be stripped", k)
		}
	}
	if !bytes.HasPrefix(body["input"], []byte("[")) {
		t.Errorf("input must be a list: %s", body["input"])
	}
}
