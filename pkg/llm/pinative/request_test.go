package pinative

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

func TestDecodeRequestRejects(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"array_body", `[1]`, "Request body must be a JSON object"},
		{"string_body", `"x"`, "Request body must be a JSON object"},
		{"no_model", `{"context":{"messages":[]}}`, "Missing `modelId` (or `model.id`) field"},
		{"empty_model", `{"modelId":"","context":{"messages":[]}}`, "Missing `modelId` (or `model.id`) field"},
		{"model_object_without_id", `{"model":{"name":"x"},"context":{"messages":[]}}`, "Missing `modelId` (or `model.id`) field"},
		{"no_context", `{"modelId":"m"}`, "Missing `context` object"},
		{"context_array", `{"modelId":"m","context":[]}`, "Missing `context` object"},
		{"messages_missing", `{"modelId":"m","context":{}}`, "`context.messages` must be an array"},
		{"messages_object", `{"modelId":"m","context":{"messages":{}}}`, "`context.messages` must be an array"},
		{"system_string", `{"modelId":"m","context":{"messages":[],"systemPrompt":"s"}}`, "`context.systemPrompt` must be an array of strings when present"},
		{"system_numbers", `{"modelId":"m","context":{"messages":[],"systemPrompt":[1]}}`, "`context.systemPrompt` must be an array of strings when present"},
		{"tools_object", `{"modelId":"m","context":{"messages":[],"tools":{}}}`, "`context.tools` must be an array when present"},
		{"bad_reasoning", `{"modelId":"m","context":{"messages":[]},"options":{"reasoning":"max"}}`, "`options.reasoning` must be one of minimal, low, medium, high, xhigh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(tt.body))
			var re *RequestError
			if !errors.As(err, &re) || re.Message != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestDecodeRequestInvalidJSON(t *testing.T) {
	_, err := DecodeRequest([]byte(`{"modelId":`))
	var re *RequestError
	if !errors.As(err, &re) || len(re.Message) < 18 || re.Message[:18] != "Invalid JSON body:" {
		t.Fatalf("err = %v", err)
	}
}

func TestDecodeRequestFull(t *testing.T) {
	body, err := os.ReadFile("testdata/request.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	temp, topK := 0.2, 40
	want := &Request{ModelID: "claude-sonnet-4-5", Stream: false, Canonical: llm.Request{
		Model: "claude-sonnet-4-5", Stream: false, OriginAPI: llm.APIPi,
		System: []llm.SystemBlock{{Text: "You are helpful."}, {Text: "Be brief."}},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Content{llm.Text("hello")}, Timestamp: 1700000000000},
			{Role: llm.RoleUser, Content: []llm.Content{llm.Text("look"), llm.Image("image/png", "iVBORw0KGgo=")}},
			{Role: llm.RoleAssistant, API: llm.APIAnthropic, Provider: "anthropic", Model: "claude-sonnet-4-5",
				ResponseID: "msg_1", StopReason: llm.StopToolUse, Timestamp: 1700000001000,
				Usage: llm.Usage{Input: 10, Output: 20, CacheRead: 5, Reasoning: 3, Cost: llm.Cost{Total: 0.5}},
				Content: []llm.Content{
					{Type: llm.ContentThinking, Thinking: "hmm", ThinkingSignature: "sig"},
					{Type: llm.ContentToolCall, ID: "toolu_1", Name: "read", Arguments: json.RawMessage(`{"path": "a"}`), ArgumentsText: `{"path": "a"}`},
				}},
			{Role: llm.RoleToolResult, ToolCallID: "toolu_1", ToolName: "read", IsError: true, Content: []llm.Content{llm.Text("nope")}},
		},
		Tools:       []llm.Tool{{Name: "read", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}},
		Temperature: &temp, TopK: &topK, MaxTokens: 4096, StopSequences: []string{"END"},
		SessionID: "sess-1", PromptCacheKey: "pck", Reasoning: llm.EffortHigh, ThinkingBudget: 12000,
		ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "read"}, ServiceTier: "priority",
		Headers: map[string]string{"x-a": "b"}, Metadata: map[string]string{"user": "u1", "n": "3"},
		CacheControl: &llm.CacheControl{TTL: "1h"},
		Extra: map[string]json.RawMessage{"cacheRetention": json.RawMessage(`"long"`), "minP": json.RawMessage(`0.1`),
			"thinkingBudgets": json.RawMessage(`{"high": 12000}`)},
	}}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("decoded\n%s\nwant\n%s", g, w)
	}
}

func TestDecodeRequestDefaultsAndTolerance(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		model  string
		stream bool
		n      int
	}{
		{"model_string_stream_default", `{"model":"m1","context":{"messages":[]}}`, "m1", true, 0},
		{"model_object", `{"model":{"id":"m2","provider":"x"},"context":{"messages":[{"role":"user","content":"hi"}]},"stream":true}`, "m2", true, 1},
		{"unknown_fields_and_blocks_skipped", `{"modelId":"m3","extra":1,"context":{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"document","x":1}],"new":true}]},"options":{"unknown":1,"temperature":null}}`, "m3", true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if got.ModelID != tt.model || got.Stream != tt.stream || len(got.Canonical.Messages) != tt.n || got.Canonical.Temperature != nil {
				t.Errorf("got %+v", got)
			}
			if tt.n > 0 && len(got.Canonical.Messages[0].Content) != 1 {
				t.Errorf("content %+v", got.Canonical.Messages[0].Content)
			}
		})
	}
}

func FuzzDecodeRequest(f *testing.F) {
	if b, err := os.ReadFile("testdata/request.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"modelId":"m","context":{"messages":[{"role":"assistant","content":[{"type":"toolCall","id":"1","name":"x","arguments":"oops"}]}]}}`))
	f.Add([]byte(`{"model":{"id":"m"},"context":{"messages":[],"systemPrompt":["a"],"tools":[{}]},"options":{"toolChoice":{"type":"function","function":{"name":"x"}}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeRequest(body)
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) || re.Message == "" {
				t.Fatalf("error %T %v is not a RequestError", err, err)
			}
			return
		}
		if r.ModelID == "" {
			t.Fatal("accepted without a model")
		}
		for i := range r.Canonical.Messages {
			if out := AppendMessage(nil, &r.Canonical.Messages[i]); !json.Valid(out) {
				t.Fatalf("re-encoded message is invalid JSON: %s", out)
			}
		}
	})
}

// FuzzDecodeFastMatchesSlow checks the single-pass decoder against the
// encoding/json one on every body the fast path accepts.
func FuzzDecodeFastMatchesSlow(f *testing.F) {
	if b, err := os.ReadFile("testdata/request.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"modelId":"m","context":{"messages":[{"role":"user","content":"\ud83d\ude00 \ud800x \u00e9"}]}}`))
	f.Add([]byte(`{"modelId":"m","context":{"messages":[{"role":"assistant","content":[{"type":"native","raw":null},{"type":"toolCall","arguments":null}],"usage":{"cost":{"total":1e-3}}}],"tools":null}}`))
	// Keys that encoding/json folds to known ones across byte lengths (U+017F folds to s).
	f.Add([]byte(`{"modelId":"m","ſtream":true,"context":{"messages":[{"role":"user","content":"hi"}],"ſyſtemPrompt":"be brief"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, err := decodeFast(body)
		if err != nil {
			return
		}
		slow, err := decodeSlow(body)
		if err != nil {
			t.Fatalf("fast accepted, slow rejected: %v\n%s", err, body)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fast and slow disagree on %s\nfast %+v\nslow %+v", body, fast, slow)
		}
	})
}
