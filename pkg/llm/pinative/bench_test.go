package pinative

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/tools/benchcpu"
)

// BenchmarkEncodeTextDelta encodes one text_delta whose partial message
// holds ~1 KB of earlier content (a typical early-turn event).
func BenchmarkEncodeTextDelta(b *testing.B) {
	m := &llm.Message{Role: llm.RoleAssistant, API: llm.APIGoogle, Provider: "google", Model: "gemini-2.5-flash",
		Content: []llm.Content{{Type: llm.ContentThinking, Thinking: strings.Repeat("thinking ", 60), ThinkingSignature: "c2ln"},
			llm.Text(strings.Repeat("answer text ", 40))}}
	ev := llm.Event{Type: llm.EventTextDelta, ContentIndex: 1, Delta: "answer text ", Partial: m}
	buf := AppendFrame(nil, &ev)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendFrame(buf[:0], &ev)
	}
}

// BenchmarkEncodeToolCallDelta encodes a toolcall_delta of an open call
// (arguments re-parsed tolerantly for the partial view).
func BenchmarkEncodeToolCallDelta(b *testing.B) {
	m := &llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{
		{Type: llm.ContentToolCall, ID: "call_1", Name: "write", ArgumentsText: `{"path":"a.go","content":"package main\n`}}}
	ev := llm.Event{Type: llm.EventToolCallDelta, Delta: `\n`, Partial: m}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendFrame(buf[:0], &ev)
	}
}

// agentBody is a ~300 KB, 300-message pi-native request.
func agentBody() []byte {
	para := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 22)
	var msgs []string
	for i := 0; len(msgs) < 300; i++ {
		id := fmt.Sprintf("call_%d", i)
		p, _ := json.Marshal(para)
		short, _ := json.Marshal(para[:300])
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"user","content":%s,"timestamp":1700000000000}`, p),
			fmt.Sprintf(`{"role":"assistant","api":"anthropic-messages","provider":"anthropic","model":"claude","stopReason":"toolUse","timestamp":1700000000000,"usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"content":[{"type":"thinking","thinking":%s,"thinkingSignature":"sig"},{"type":"text","text":%s},{"type":"toolCall","id":"%s","name":"read","arguments":{"path":"/src/main.go"}}]}`, short, short, id),
			fmt.Sprintf(`{"role":"toolResult","toolCallId":"%s","toolName":"read","isError":false,"content":[{"type":"text","text":%s}],"timestamp":1700000000000}`, id, p),
		)
	}
	return []byte(`{"modelId":"gemini-2.5-flash","context":{"systemPrompt":["You are a coding agent."],"messages":[` +
		strings.Join(msgs, ",") + `],"tools":[{"name":"read","description":"Read","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}]},"options":{"reasoning":"high","sessionId":"s"}}`)
}

func BenchmarkDecodeRequest300(b *testing.B) {
	body := agentBody()
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
