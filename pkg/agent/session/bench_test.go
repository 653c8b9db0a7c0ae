package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/tools/benchcpu"
)

// writeLongSession writes a session of n message entries (user, assistant
// with a tool call, tool result, …) and returns its path.
func writeLongSession(b *testing.B, n int) string {
	b.Helper()
	f, err := Create(b.TempDir(), "/home/ada/src/app", Options{})
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("lorem ipsum dolor sit amet ", 8)
	for i := 0; i < n; i++ {
		var m *llm.Message
		switch i % 3 {
		case 0:
			m = &llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text(text)}, Timestamp: 1}
		case 1:
			m = &llm.Message{Role: llm.RoleAssistant, API: llm.APIAnthropic, Provider: "anthropic", Model: "m", StopReason: llm.StopToolUse,
				Content: []llm.Content{llm.Text(text), llm.ToolCall("t", "bash", json.RawMessage(`{"command":"ls -la"}`))}, Timestamp: 1}
		default:
			m = &llm.Message{Role: llm.RoleToolResult, ToolCallID: "t", ToolName: "bash", Content: []llm.Content{llm.Text(text)}, Timestamp: 1}
		}
		if _, err := f.AppendMessage(NewMessage(m, nil)); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Persist(); err != nil {
		b.Fatal(err)
	}
	return f.Path()
}

// BenchmarkOpen10k is loading a 10 000-entry session and rebuilding its
// context (target: ≤ 50 ms), at Go's default GC target.
func BenchmarkOpen10k(b *testing.B) { benchOpen10k(b) }

// BenchmarkOpen10kAgentGC is the same with the GC target the omp agent
// process runs with (cmd/omp agentGCPercent = 400).
func BenchmarkOpen10kAgentGC(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	benchOpen10k(b)
}

func benchOpen10k(b *testing.B) {
	p := writeLongSession(b, 10_000)
	st, _ := os.Stat(p)
	b.SetBytes(st.Size())
	b.ResetTimer()
	stop := benchcpu.Start(b)
	defer stop()
	for b.Loop() {
		f, err := Open(p)
		if err != nil {
			b.Fatal(err)
		}
		if n := len(LLMMessages(f.BuildContext().Messages)); n != 10_000 {
			b.Fatalf("messages = %d", n)
		}
	}
}

// BenchmarkAppend is one message append to an on-disk session.
func BenchmarkAppend(b *testing.B) {
	f, _ := Create(filepath.Join(b.TempDir(), "s"), "/x", Options{})
	_ = f.Persist()
	m := NewMessage(&llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("hello")}}, nil)
	stop := benchcpu.Start(b)
	defer stop()
	for b.Loop() {
		if _, err := f.AppendMessage(m); err != nil {
			b.Fatal(err)
		}
	}
}
