package anthropic

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/tools/benchcpu"
)

// agentRequest builds a ~300 KB, 300-message agent conversation in the
// Anthropic wire format.
func agentRequest(tb testing.TB) []byte {
	tb.Helper()
	type block map[string]any
	var msgs []map[string]any
	filler := strings.Repeat("lorem ipsum dolor sit amet, \"quoted\" <tag> ", 24) // ~900 bytes
	msgs = append(msgs, map[string]any{"role": "user", "content": []block{{"type": "text", "text": "Refactor the package."}}})
	for i := 0; len(msgs) < 300; i++ {
		id := fmt.Sprintf("toolu_%04d", i)
		msgs = append(msgs, map[string]any{"role": "assistant", "content": []block{
			{"type": "thinking", "thinking": "step " + filler[:200], "signature": "sig" + id},
			{"type": "text", "text": "Reading file " + id},
			{"type": "tool_use", "id": id, "name": "Read", "input": map[string]any{"path": "pkg/" + id + ".go", "limit": 200}},
		}})
		msgs = append(msgs, map[string]any{"role": "user", "content": []block{
			{"type": "tool_result", "tool_use_id": id, "content": []block{{"type": "text", "text": filler}}},
		}})
	}
	last := msgs[len(msgs)-1]
	last["content"] = append(last["content"].([]block), block{"type": "text", "text": "Continue."})
	body, err := json.Marshal(map[string]any{
		"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": true,
		"system":   []block{{"type": "text", "text": filler}},
		"messages": msgs,
		"tools": []block{{"name": "Read", "description": "Read a file", "input_schema": map[string]any{
			"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

func TestAgentRequestShape(t *testing.T) {
	body := agentRequest(t)
	r, err := DecodeRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) < 250_000 || len(body) > 350_000 || len(r.Messages) != 302 {
		t.Fatalf("body %d bytes, %d messages", len(body), len(r.Messages))
	}
	out := EncodeRequest(nil, r, testModel, false, true)
	if !jsonEqual(out, body) {
		t.Fatal("A → canonical → AN round trip changed the request")
	}
}

func BenchmarkTranslateAgentRequest(b *testing.B) {
	body := agentRequest(b)
	buf := make([]byte, 0, len(body)+1024)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	stop := benchcpu.Start(b)
	for b.Loop() {
		r, err := DecodeRequest(body)
		if err != nil {
			b.Fatal(err)
		}
		buf = EncodeRequest(buf[:0], r, testModel, false, true)
	}
	stop()
}

func BenchmarkDecodeAgentRequest(b *testing.B) {
	body := agentRequest(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	stop := benchcpu.Start(b)
	for b.Loop() {
		if _, err := DecodeRequest(body); err != nil {
			b.Fatal(err)
		}
	}
	stop()
}

func BenchmarkEncodeAgentRequest(b *testing.B) {
	body := agentRequest(b)
	r, _ := DecodeRequest(body)
	buf := make([]byte, 0, len(body)+1024)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		buf = EncodeRequest(buf[:0], r, testModel, false, true)
	}
}

// BenchmarkStreamEncodeEvent measures re-encoding one canonical delta as an
// Anthropic SSE frame; allocations must stay at 0.
func BenchmarkStreamEncodeEvent(b *testing.B) {
	m := &llm.Message{Content: []llm.Content{llm.Text("")}}
	enc := NewStreamEncoder("claude-x", "msg_1")
	buf := enc.Encode(nil, &llm.Event{Type: llm.EventStart, Partial: m})
	buf = enc.Encode(buf[:0], &llm.Event{Type: llm.EventTextStart, Partial: m})
	ev := llm.Event{Type: llm.EventTextDelta, Delta: "Hello, this is a typical \"delta\" of text.\n", Partial: m}
	b.ReportAllocs()
	for b.Loop() {
		buf = enc.Encode(buf[:0], &ev)
	}
}

// BenchmarkUpstreamStream measures parsing an upstream SSE body into
// canonical events, per event.
func BenchmarkUpstreamStream(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":1}}}\n\n")
	sb.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	const n = 1000
	for range n {
		sb.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello world \"}}\n\n")
	}
	sb.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":5}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	body := sb.String()
	b.ReportAllocs()
	for b.Loop() {
		s := &streamState{p: &Provider{}, ctx: b.Context(), body: io.NopCloser(nil), rd: newReader(body)}
		count := 0
		s.run(func(llm.Event) bool { count++; return true })
		if count < n {
			b.Fatalf("%d events", count)
		}
	}
}
