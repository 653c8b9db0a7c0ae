package e2e_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/ompgo/omp/pkg/vault"
)

// geminiClient is the Google GenAI SDK pointed at the gateway, with the
// gateway token as its API key (sent as x-goog-api-key).
func geminiClient(t *testing.T, s *stack) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: s.token, Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: s.gwURL + "/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// anthropicToolCase is the Anthropic wire answering with thinking, text
// and a tool call (the recorded stream of pkg/llm/anthropic).
func anthropicToolCase() upstreamCase {
	return upstreamCase{
		name:   "Anthropic",
		wire:   anthropicWire,
		model:  "anthropic/claude-sonnet-4-5",
		cred:   vault.Credential{Type: vault.TypeAPIKey, Key: "sk-ant-api03-e2e-gemini"},
		stream: "anthropic/testdata/upstream_thinking_tool.sse",
		text:   "Checking Paris <now>.",
		uri:    "/v1/messages",
		body:   `"model":"claude-sonnet-4-5"`,
		auth: func(secret string) map[string]string {
			return map[string]string{"x-api-key": secret}
		},
	}
}

// A Gemini SDK client reaches every upstream wire through the gateway:
// a one-shot generateContent and a streamed one get the upstream's text,
// and the upstream sees the broker's credential on its own wire.
func TestGeminiSDKReachesEveryUpstream(t *testing.T) {
	for _, tc := range append([]upstreamCase{anthropicToolCase()}, upstreamCases()...) {
		t.Run(tc.name, func(t *testing.T) {
			sse := replay(t, tc.stream)
			f := newUpstream(t, tc.wire, func(w http.ResponseWriter, _ *http.Request, _ int, _ string) { writeSSE(w, sse) })
			s := startStack(t, f)
			s.upload(t, tc.wire.provider, tc.cred, 1)
			c := geminiClient(t, s)
			ctx := context.Background()
			cfg := &genai.GenerateContentConfig{SystemInstruction: genai.NewContentFromText("Be brief.", genai.RoleUser)}

			resp, err := c.Models.GenerateContent(ctx, tc.model, genai.Text("Say hello"), cfg)
			if err != nil {
				t.Fatalf("generateContent: %v", err)
			}
			if got := resp.Text(); got != tc.text {
				t.Errorf("generateContent text %q, want %q", got, tc.text)
			}
			if fr := resp.Candidates[0].FinishReason; fr != genai.FinishReasonStop {
				t.Errorf("finishReason %q", fr)
			}
			if resp.UsageMetadata == nil || resp.UsageMetadata.TotalTokenCount == 0 {
				t.Errorf("usageMetadata %+v", resp.UsageMetadata)
			}

			var text strings.Builder
			chunks := 0
			for r, err := range c.Models.GenerateContentStream(ctx, tc.model, genai.Text("Say hello"), cfg) {
				if err != nil {
					t.Fatalf("streamGenerateContent: %v", err)
				}
				chunks++
				text.WriteString(r.Text())
			}
			if text.String() != tc.text || chunks < 2 {
				t.Errorf("stream text %q in %d chunks, want %q", text.String(), chunks, tc.text)
			}

			reqs := f.requests()
			if len(reqs) != 2 {
				t.Fatalf("upstream saw %d requests, want 2", len(reqs))
			}
			for i, r := range reqs {
				tc.check(t, s, i, r, tc.secret())
				if !strings.Contains(r.body, "Be brief.") {
					t.Errorf("request %d: the system instruction did not reach the upstream: %s", i, r.body)
				}
			}
		})
	}
}

// A function-calling turn from the Gemini SDK: the model's calls come
// back as functionCall parts, and the client's next request (the model
// turn as it got it, then a functionResponse per call) reaches the
// upstream as that wire's tool results, with the upstream's own reasoning
// signature restored.
func TestGeminiSDKFunctionCalling(t *testing.T) {
	for _, tc := range []struct {
		upstreamCase
		second    string   // the upstream's answer to the tool results (a recorded stream, or "" for anthropicText)
		calls     []string // the function names of the first answer
		signature string   // what the upstream must get back in the replay
		result    string   // how a tool result looks on the upstream wire
	}{
		{anthropicToolCase(), "", []string{"get_weather", "get_time"},
			`"signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3h"`, `"type":"tool_result"`},
		{upstreamCase{name: "Gemini", wire: geminiWire, model: "google/gemini-3-pro-preview",
			cred: vault.Credential{Type: vault.TypeAPIKey, Key: geminiKey}, stream: "google/testdata/parallel_calls.sse"},
			"google/testdata/text_thinking.sse", []string{"get_weather", "get_time"},
			`"thoughtSignature":"c2lnLWNhbGw="`, `"functionResponse"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, second := replay(t, tc.stream), anthropicText
			if tc.second != "" {
				second = replay(t, tc.second)
			}
			f := newUpstream(t, tc.wire, func(w http.ResponseWriter, _ *http.Request, n int, _ string) {
				if n == 0 {
					writeSSE(w, first)
					return
				}
				writeSSE(w, second)
			})
			s := startStack(t, f)
			s.upload(t, tc.wire.provider, tc.cred, 1)
			c := geminiClient(t, s)
			ctx := context.Background()
			cfg := &genai.GenerateContentConfig{
				Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{
					{Name: "get_weather", Description: "The weather in a city", Parameters: &genai.Schema{
						Type: genai.TypeObject, Properties: map[string]*genai.Schema{"city": {Type: genai.TypeString}}, Required: []string{"city"}}},
					{Name: "get_time", Description: "The time", Parameters: &genai.Schema{Type: genai.TypeObject}},
				}}},
				ThinkingConfig: &genai.ThinkingConfig{IncludeThoughts: true, ThinkingBudget: genai.Ptr[int32](2048)},
			}
			history := []*genai.Content{genai.NewContentFromText("Weather and time in Paris?", genai.RoleUser)}
			resp, err := c.Models.GenerateContent(ctx, tc.model, history, cfg)
			if err != nil {
				t.Fatalf("first turn: %v", err)
			}
			calls := resp.FunctionCalls()
			var names []string
			for _, fc := range calls {
				names = append(names, fc.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.calls, ",") {
				t.Fatalf("function calls %q, want %q", names, tc.calls)
			}
			if fr := resp.Candidates[0].FinishReason; fr != genai.FinishReasonStop {
				t.Errorf("finishReason %q, want STOP for tool calls", fr)
			}
			history = append(history, resp.Candidates[0].Content)
			answers := &genai.Content{Role: genai.RoleUser}
			for _, fc := range calls {
				answers.Parts = append(answers.Parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{
					ID: fc.ID, Name: fc.Name, Response: map[string]any{"output": "result of " + fc.Name}}})
			}
			history = append(history, answers)
			resp, err = c.Models.GenerateContent(ctx, tc.model, history, cfg)
			if err != nil {
				t.Fatalf("second turn: %v", err)
			}
			if resp.Text() == "" {
				t.Errorf("second turn without text")
			}
			reqs := f.requests()
			if len(reqs) != 2 {
				t.Fatalf("upstream saw %d requests, want 2", len(reqs))
			}
			body := reqs[1].body
			for _, want := range append([]string{tc.signature, tc.result}, tc.calls...) {
				if !strings.Contains(body, want) {
					t.Errorf("second upstream request lacks %s: %s", want, body)
				}
			}
			for _, name := range tc.calls {
				if !strings.Contains(body, "result of "+name) {
					t.Errorf("second upstream request lacks the %s result: %s", name, body)
				}
			}
		})
	}
}
