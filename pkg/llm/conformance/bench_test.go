package conformance

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/anthropic"
	"github.com/ompgo/omp/pkg/llm/openai"
	"github.com/ompgo/omp/tools/benchcpu"
)

// The cross-family benchmarks translate a ~300 KB, 300-message agent
// session between families: the inbound body is decoded to the canonical
// request and encoded as the other family's upstream body, as the gateway
// does for every request it routes across families.

var (
	benchClaude = llm.Model{ID: "claude-sonnet-4-5", Provider: "anthropic", API: llm.APIAnthropic, MaxTokens: 64000}
	benchGPT    = llm.Model{ID: "gpt-5", Provider: "openai", API: llm.APIOpenAIChat, Reasoning: true}
)

// benchFiller is ~1.3 KB of prose with characters both dialects escape.
var benchFiller = strings.Repeat("lorem ipsum dolor sit amet, \"quoted\" <tag>\n", 30)

// messagesBody builds a 300-message Anthropic Messages agent session.
func messagesBody(tb testing.TB) []byte {
	tb.Helper()
	type block = map[string]any
	msgs := []block{{"role": "user", "content": []block{{"type": "text", "text": "Refactor the package."}}}}
	for i := 0; len(msgs) < 300; i++ {
		id := fmt.Sprintf("toolu_%04d", i)
		msgs = append(msgs,
			block{"role": "assistant", "content": []block{
				{"type": "text", "text": "Reading file " + id},
				{"type": "tool_use", "id": id, "name": "Read", "input": block{"path": "pkg/" + id + ".go", "limit": 200}},
			}},
			block{"role": "user", "content": []block{
				{"type": "tool_result", "tool_use_id": id, "content": []block{{"type": "text", "text": benchFiller}}},
			}})
	}
	body, err := json.Marshal(block{
		"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": true,
		"system":   []block{{"type": "text", "text": benchFiller}},
		"messages": msgs,
		"tools": []block{{"name": "Read", "description": "Read a file", "input_schema": block{
			"type": "object", "properties": block{"path": block{"type": "string"}}}}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// chatBody builds the same session as a Chat Completions body.
func chatBody(tb testing.TB) []byte {
	tb.Helper()
	type obj = map[string]any
	msgs := []obj{{"role": "system", "content": benchFiller}, {"role": "user", "content": "Refactor the package."}}
	for i := 0; len(msgs) < 300; i++ {
		id := fmt.Sprintf("call_%04d", i)
		args := fmt.Sprintf(`{"path":"pkg/%s.go","limit":200}`, id)
		msgs = append(msgs,
			obj{"role": "assistant", "content": "Reading file " + id, "tool_calls": []obj{
				{"id": id, "type": "function", "function": obj{"name": "Read", "arguments": args}}}},
			obj{"role": "tool", "tool_call_id": id, "content": benchFiller})
	}
	body, err := json.Marshal(obj{
		"model": "gpt-5", "stream": true, "max_completion_tokens": 32000, "messages": msgs,
		"tools": []obj{{"type": "function", "function": obj{"name": "Read", "description": "Read a file",
			"parameters": obj{"type": "object", "properties": obj{"path": obj{"type": "string"}}}}}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

func TestBenchBodiesAreAgentSized(t *testing.T) {
	a, err := anthropic.DecodeRequest(messagesBody(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := openai.DecodeChatRequest(chatBody(t))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"messages": messagesBody(t), "chat": chatBody(t)} {
		if len(body) < 250_000 || len(body) > 350_000 {
			t.Errorf("%s body is %d bytes", name, len(body))
		}
	}
	if len(a.Messages) != 301 || len(c.Messages) != 299 {
		t.Errorf("decoded %d Messages and %d Chat messages", len(a.Messages), len(c.Messages))
	}
}

// BenchmarkTranslateMessagesToChat decodes a Messages body and encodes
// the Chat Completions upstream body.
func BenchmarkTranslateMessagesToChat(b *testing.B) {
	body := messagesBody(b)
	compat := openai.ResolveChatCompat(benchGPT, "")
	out := make([]byte, 0, 2*len(body))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	stop := benchcpu.Start(b)
	for b.Loop() {
		req, err := anthropic.DecodeRequest(body)
		if err != nil {
			b.Fatal(err)
		}
		out = openai.AppendChatBody(out[:0], req, benchGPT, compat)
	}
	stop()
}

// BenchmarkTranslateChatToMessages decodes a Chat Completions body and
// encodes the Anthropic Messages upstream body.
func BenchmarkTranslateChatToMessages(b *testing.B) {
	body := chatBody(b)
	out := make([]byte, 0, 2*len(body))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	stop := benchcpu.Start(b)
	for b.Loop() {
		req, err := openai.DecodeChatRequest(body)
		if err != nil {
			b.Fatal(err)
		}
		out = anthropic.EncodeRequest(out[:0], req, benchClaude, false, true)
	}
	stop()
}
