package google

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/tools/benchcpu"
)

// agentRequest is a 300-message, ~300 KB agent conversation: user turns,
// assistant turns with thinking, text and tool calls, and tool results.
func agentRequest() *llm.Request {
	para := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 22) // ~1 KB
	req := &llm.Request{System: []llm.SystemBlock{{Text: strings.Repeat("You are a coding agent. ", 200)}}}
	for i := 0; i < 10; i++ {
		req.Tools = append(req.Tools, llm.Tool{Name: fmt.Sprintf("tool_%d", i), Description: "does things",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"file"},"n":{"type":["integer","null"]}},"required":["path"],"additionalProperties":false}`)})
	}
	for i := 0; len(req.Messages) < 300; i++ {
		id := fmt.Sprintf("call_%d", i)
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text(para)}},
			llm.Message{Role: llm.RoleAssistant, Provider: "google", Model: "gemini-2.5-flash", Content: []llm.Content{
				{Type: llm.ContentThinking, Thinking: para[:300], ThinkingSignature: "c2lnbmF0dXJl"},
				llm.Text(para[:200]),
				llm.ToolCall(id, "tool_1", json.RawMessage(`{"path":"/src/main.go","n":3}`)),
			}},
			llm.Message{Role: llm.RoleToolResult, ToolCallID: id, ToolName: "tool_1", Content: []llm.Content{llm.Text(para)}},
		)
	}
	return req
}

func BenchmarkBuildRequest300(b *testing.B) {
	req := agentRequest()
	raw := mustBuild(b, req).AppendJSON(nil)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	stop := benchcpu.Start(b)
	for b.Loop() {
		body, err := BuildRequest(req, flash25, Target{})
		if err != nil {
			b.Fatal(err)
		}
		raw = body.AppendJSON(raw[:0])
	}
	stop()
}

func mustBuild(b *testing.B, req *llm.Request) *GenerateContentRequest {
	out, err := BuildRequest(req, flash25, Target{})
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkChunkToEvents decodes one typical text chunk per iteration on
// a single long stream: the per-chunk cost must stay flat.
func BenchmarkChunkToEvents(b *testing.B) {
	chunk := []byte(`{"candidates":[{"content":{"parts":[{"text":"Hello there, this is a typical streamed sentence of text."}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":29,"candidatesTokenCount":10,"totalTokenCount":39},"modelVersion":"gemini-2.5-flash","responseId":"resp-1"}`)
	events := 0
	bl := llm.NewBuilder(llm.APIGoogle, "google", "m", func(llm.Event) bool { events++; return true })
	bl.Start()
	d := NewDecoder(bl, DecoderOptions{})
	b.ReportAllocs()
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		if !d.Chunk(chunk) {
			b.Fatal("stream ended")
		}
	}
}

func BenchmarkChunkFunctionCall(b *testing.B) {
	chunk := []byte(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris","unit":"c"}},"thoughtSignature":"c2ln"}],"role":"model"}}],"usageMetadata":{"promptTokenCount":29}}`)
	bl := llm.NewBuilder(llm.APIGoogle, "google", "m", func(llm.Event) bool { return true })
	bl.Start()
	d := NewDecoder(bl, DecoderOptions{NewID: seqIDs()})
	b.ReportAllocs()
	for b.Loop() {
		if !d.Chunk(chunk) {
			b.Fatal("stream ended")
		}
	}
}
