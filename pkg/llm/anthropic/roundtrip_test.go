package anthropic

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

// codecServer is a minimal gateway: /v1/messages decoded by the codec,
// answered by a scripted provider, encoded back by the codec.
func codecServer(t *testing.T, prov llm.Provider, decoded chan<- *llm.Request) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, err := DecodeRequest(body)
		if err != nil {
			status, b := EncodeError(err)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write(b)
			return
		}
		if decoded != nil {
			decoded <- req
		}
		s, err := prov.Stream(r.Context(), req, &llm.Model{}, llm.Credential{})
		if err != nil {
			status, b := EncodeError(err)
			w.WriteHeader(status)
			_, _ = w.Write(b)
			return
		}
		defer s.Close()
		if !req.Stream {
			m, _ := llm.Collect(s)
			out, err := EncodeMessage(nil, m, req.Model, "msg_local")
			if err != nil {
				status, b := EncodeError(&llm.UpstreamError{Message: m.ErrorMessage})
				w.WriteHeader(status)
				_, _ = w.Write(b)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(out)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		enc := NewStreamEncoder(req.Model, "msg_local")
		var buf []byte
		for ev := range s.Events() {
			buf = enc.Encode(buf[:0], &ev)
			if len(buf) > 0 {
				_, _ = w.Write(buf)
				w.(http.Flusher).Flush()
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// scripted is the canonical answer the upstream gives.
func scripted() llm.Message {
	return llm.Message{
		Role: llm.RoleAssistant, API: llm.APIAnthropic, Provider: "anthropic", Model: "claude-x",
		ResponseID: "msg_0123456789abcdef01234567",
		Content: []llm.Content{
			{Type: llm.ContentThinking, Thinking: "The user wants weather for two cities.", ThinkingSignature: "c2lnbmF0dXJlLWJ5dGVz=="},
			llm.Text("Checking both <cities> & more…"),
			{Type: llm.ContentToolCall, ID: "toolu_01A", Name: "get_weather", ArgumentsText: `{"city":"Paris","unit":"c"}`},
			{Type: llm.ContentToolCall, ID: "toolu_01B", Name: "get_weather", ArgumentsText: `{"city":"Tokyo"}`},
			{Type: llm.ContentToolCall, ID: "toolu_01C", Name: "get_time"},
		},
		Usage:      llm.Usage{Input: 25, Output: 89, CacheRead: 10, CacheWrite: 7},
		StopReason: llm.StopToolUse,
	}
}

func sdkParams(stream bool) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-x",
		MaxTokens: 1024,
		System:    []anthropic.TextBlockParam{{Text: "You are terse."}},
		Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock("Weather?")),
			anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("toolu_00", map[string]any{"city": "Oslo"}, "get_weather")),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_00", "3°C", false), anthropic.NewTextBlock("And Paris and Tokyo?")),
		},
		Tools: []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
			Properties: map[string]any{"city": map[string]any{"type": "string"}}}, "get_weather")},
	}
}

func checkAccumulated(t *testing.T, got anthropic.Message) {
	t.Helper()
	want := scripted()
	if got.ID != want.ResponseID || string(got.StopReason) != "tool_use" || got.Model != "claude-x" {
		t.Fatalf("message = id %q stop %q model %q", got.ID, got.StopReason, got.Model)
	}
	if got.Usage.InputTokens != 25 || got.Usage.OutputTokens != 89 || got.Usage.CacheReadInputTokens != 10 || got.Usage.CacheCreationInputTokens != 7 {
		t.Fatalf("usage = %+v", got.Usage)
	}
	if len(got.Content) != len(want.Content) {
		t.Fatalf("content has %d blocks, want %d", len(got.Content), len(want.Content))
	}
	for i, w := range want.Content {
		g := got.Content[i]
		switch w.Type {
		case llm.ContentThinking:
			if g.Type != "thinking" || g.Thinking != w.Thinking || g.Signature != w.ThinkingSignature {
				t.Errorf("block %d = %+v", i, g)
			}
		case llm.ContentText:
			if g.Type != "text" || g.Text != w.Text {
				t.Errorf("block %d = %q", i, g.Text)
			}
		case llm.ContentToolCall:
			wantArgs := w.ArgumentsText
			if wantArgs == "" {
				wantArgs = "{}"
			}
			if g.Type != "tool_use" || g.ID != w.ID || g.Name != w.Name || !jsonEqual(g.Input, []byte(wantArgs)) {
				t.Errorf("block %d = %s %s %s %s", i, g.Type, g.ID, g.Name, g.Input)
			}
		}
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && jsonString(x) == jsonString(y)
}

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestSDKStreamAccumulateEqualsCanonical(t *testing.T) {
	for _, chunk := range []int{0, 3} {
		decoded := make(chan *llm.Request, 1)
		srv := codecServer(t, &llmtest.Provider{Messages: []llm.Message{scripted()}, Chunk: chunk}, decoded)
		client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
		stream := client.Messages.NewStreaming(context.Background(), sdkParams(true))
		var msg anthropic.Message
		n := 0
		for stream.Next() {
			n++
			if err := msg.Accumulate(stream.Current()); err != nil {
				t.Fatalf("Accumulate: %v", err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatal("no events")
		}
		checkAccumulated(t, msg)

		req := <-decoded
		if len(req.Messages) != 4 || req.Messages[2].Role != llm.RoleToolResult || req.Messages[2].ToolName != "get_weather" ||
			req.Messages[3].Content[0].Text != "And Paris and Tokyo?" || !req.Stream || req.System[0].Text != "You are terse." {
			t.Fatalf("decoded request = %+v", req)
		}
	}
}

func TestSDKNonStreamEqualsCanonical(t *testing.T) {
	srv := codecServer(t, &llmtest.Provider{Messages: []llm.Message{scripted()}}, nil)
	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	msg, err := client.Messages.New(context.Background(), sdkParams(false))
	if err != nil {
		t.Fatal(err)
	}
	checkAccumulated(t, *msg)
}

func TestSDKSeesMidStreamError(t *testing.T) {
	m := scripted()
	m.Content = m.Content[1:2]
	m.StopReason, m.ErrorMessage = llm.StopError, "Overloaded"
	srv := codecServer(t, &llmtest.Provider{Messages: []llm.Message{m}}, nil)
	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	stream := client.Messages.NewStreaming(context.Background(), sdkParams(true))
	for stream.Next() {
	}
	var apiErr *anthropic.Error
	if err := stream.Err(); err == nil || !asError(err, &apiErr) {
		t.Fatalf("stream error = %v, want *anthropic.Error", err)
	}
}

func TestSDKSeesHTTPErrorStatus(t *testing.T) {
	srv := codecServer(t, &llmtest.Provider{Err: &llm.UpstreamError{Status: 429, Type: "rate_limit_error", Message: "slow down"}}, nil)
	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	_, err := client.Messages.New(context.Background(), sdkParams(false))
	var apiErr *anthropic.Error
	if !asError(err, &apiErr) || apiErr.StatusCode != 429 {
		t.Fatalf("err = %v", err)
	}
}
