package openai

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/tools/benchcpu"
)

// agentChatBody builds a ~300 KB, 300-message Chat request shaped like an
// agent session: system prompt, tools, user turns, assistant tool calls
// and tool results full of code.
func agentChatBody(tb testing.TB) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-5","stream":true,"stream_options":{"include_usage":true},"messages":[`)
	b.WriteString(`{"role":"system","content":"You are a coding agent.\nFollow the rules:\n- be \"precise\"\n"}`)
	code := strings.Repeat("func main() {\n\tfmt.Println(\"hello, world\")\n\tx := map[string]int{\"a\": 1}\n}\n", 18)
	for i := 1; i < 300; i++ {
		b.WriteByte(',')
		switch i % 3 {
		case 1:
			fmt.Fprintf(&b, `{"role":"user","content":%q}`, fmt.Sprintf("step %d: please fix the bug in file_%d.go\n", i, i)+code[:900])
		case 2:
			fmt.Fprintf(&b, `{"role":"assistant","content":"Reading the file.","tool_calls":[{"id":"call_%d","type":"function","function":{"name":"read","arguments":%q}}]}`, i, fmt.Sprintf(`{"path":"file_%d.go","limit":200}`, i))
		default:
			fmt.Fprintf(&b, `{"role":"tool","tool_call_id":"call_%d","content":%q}`, i-1, code)
		}
	}
	b.WriteString(`],"tools":[`)
	for i := range 12 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"function","function":{"name":"tool_%d","description":"Does thing %d.","parameters":{"type":"object","properties":{"path":{"type":"string","description":"File path"},"limit":{"type":"integer"}},"required":["path"]}}}`, i, i)
	}
	b.WriteString(`],"tool_choice":"auto","max_completion_tokens":4096}`)
	return []byte(b.String())
}

var benchModel = llm.Model{ID: "gpt-5", Provider: "openai", API: llm.APIOpenAIResponses, Reasoning: true}

func BenchmarkTranslateChatToResponses(b *testing.B) {
	body := agentChatBody(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	out := make([]byte, 0, 2*len(body))
	stop := benchcpu.Start(b)
	for b.Loop() {
		req, err := DecodeChatRequest(body)
		if err != nil {
			b.Fatal(err)
		}
		out = AppendResponsesBody(out[:0], req, benchModel)
	}
	stop()
	b.ReportMetric(float64(len(body))/1024, "KB")
}

func BenchmarkTranslateResponsesToChat(b *testing.B) {
	req, err := DecodeChatRequest(agentChatBody(b))
	if err != nil {
		b.Fatal(err)
	}
	body := AppendResponsesBody(nil, req, benchModel)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	compat := ResolveChatCompat(benchModel, "")
	out := make([]byte, 0, 2*len(body))
	stop := benchcpu.Start(b)
	for b.Loop() {
		req, err := DecodeResponsesRequest(body)
		if err != nil {
			b.Fatal(err)
		}
		out = AppendChatBody(out[:0], req, benchModel, compat)
	}
	stop()
	b.ReportMetric(float64(len(body))/1024, "KB")
}

// streamBench drives one upstream payload per iteration through parser,
// Builder and encoder, over a stream as long as b.N.
func streamBench(b *testing.B, payload []byte, responses bool, enc func(dst []byte, ev *llm.Event) []byte) {
	var frames []byte
	var cur llm.Event // one heap copy for the whole stream, not one per event
	builder := llm.NewBuilder(llm.APIOpenAIChat, "p", "m", func(ev llm.Event) bool {
		cur = ev
		frames = enc(frames[:0], &cur)
		return true
	})
	handle := newChatParser(builder).handle
	if responses {
		handle = newRespParser(builder, llm.APIOpenAIResponses).handle
	}
	handle(payload) // warm up: start + block start
	b.ReportAllocs()
	stop := benchcpu.Start(b)
	b.ResetTimer()
	for b.Loop() {
		if !handle(payload) {
			b.Fatal("stream ended")
		}
	}
	stop()
}

var (
	chatDeltaChunk = []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hello, \"world\"\n"},"logprobs":null,"finish_reason":null}],"usage":null}`)
	respDeltaEvent = []byte(`{"type":"response.output_text.delta","sequence_number":9,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"Hello, \"world\"\n","logprobs":[]}`)
)

func BenchmarkStreamChatToChat(b *testing.B) {
	s := NewChatStream(ChatOptions{ID: "chatcmpl-1", Model: "m", IncludeUsage: true})
	streamBench(b, chatDeltaChunk, false, s.Append)
}

func BenchmarkStreamChatToResponses(b *testing.B) {
	s := NewResponsesStream(ResponsesOptions{ID: "resp_1", Model: "m"})
	streamBench(b, chatDeltaChunk, false, s.Append)
}

func BenchmarkStreamResponsesToChat(b *testing.B) {
	s := NewChatStream(ChatOptions{ID: "chatcmpl-1", Model: "m"})
	streamBench(b, respDeltaEvent, true, s.Append)
}

func BenchmarkStreamResponsesToResponses(b *testing.B) {
	s := NewResponsesStream(ResponsesOptions{ID: "resp_1", Model: "m"})
	streamBench(b, respDeltaEvent, true, s.Append)
}

// BenchmarkEncodeEvent measures the inbound encoders alone on a text
// delta: no allocation per event.
func BenchmarkEncodeEvent(b *testing.B) {
	m := &llm.Message{Content: []llm.Content{llm.Text("x")}}
	ev := llm.Event{Type: llm.EventTextDelta, Delta: "Hello, \"world\"\n", Partial: m}
	chat := NewChatStream(ChatOptions{ID: "chatcmpl-1", Model: "m", IncludeUsage: true})
	resp := NewResponsesStream(ResponsesOptions{ID: "resp_1", Model: "m"})
	resp.Append(nil, &llm.Event{Type: llm.EventStart, Partial: m})
	resp.Append(nil, &llm.Event{Type: llm.EventTextStart, Partial: m})
	buf := make([]byte, 0, 1024)
	b.Run("chat", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = chat.Append(buf[:0], &ev)
		}
	})
	b.Run("responses", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = resp.Append(buf[:0], &ev)
		}
	})
}

// BenchmarkTranslateParts splits the chat → responses translation into
// its decode and encode halves.
func BenchmarkTranslateParts(b *testing.B) {
	body := agentChatBody(b)
	b.Run("decode-chat", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeChatRequest(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	req, _ := DecodeChatRequest(body)
	b.Run("encode-responses", func(b *testing.B) {
		out := make([]byte, 0, 2*len(body))
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			out = AppendResponsesBody(out[:0], req, benchModel)
		}
	})
}
