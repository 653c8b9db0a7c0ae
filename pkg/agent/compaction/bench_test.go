package compaction

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/tools/benchcpu"
)

// longSession writes a session of about tokens estimated tokens: turns of
// a user prompt, an assistant message with text and a tool call, its tool
// result (a few hundred tokens) and a final answer.
func longSession(b *testing.B, tokens int) *session.File {
	b.Helper()
	f, err := session.Create(b.TempDir(), "/home/ada/src/app", session.Options{})
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("lorem ipsum dolor sit amet ", 8)
	output := strings.Repeat("drwxr-xr-x  2 ada ada 4096 Nov 25 19:00 some-directory-name\n", 20)
	ts := int64(1_700_000_000_000)
	add := func(m *llm.Message) {
		ts++
		m.Timestamp = ts
		if _, err := f.AppendMessage(session.NewMessage(m, nil)); err != nil {
			b.Fatal(err)
		}
	}
	total := 0
	for i := 0; total < tokens; i++ {
		id := fmt.Sprintf("toolu_%d", i)
		msgs := []*llm.Message{
			{Role: llm.RoleUser, Content: []llm.Content{llm.Text(text)}},
			{Role: llm.RoleAssistant, API: llm.APIAnthropic, Provider: "anthropic", Model: "m", StopReason: llm.StopToolUse,
				Usage: llm.Usage{Input: int64(total)}, Content: []llm.Content{llm.Text(text),
					llm.ToolCall(id, "read", json.RawMessage(fmt.Sprintf(`{"path":"src/file%d.go"}`, i%50)))}},
			{Role: llm.RoleToolResult, ToolCallID: id, ToolName: "bash", Content: []llm.Content{llm.Text(output)}},
			{Role: llm.RoleAssistant, API: llm.APIAnthropic, Provider: "anthropic", Model: "m", StopReason: llm.StopEnd,
				Usage: llm.Usage{Input: int64(total)}, Content: []llm.Content{llm.Text(text)}},
		}
		for _, m := range msgs {
			total += EstimateLLM(m)
			add(m)
		}
	}
	if err := f.Persist(); err != nil {
		b.Fatal(err)
	}
	return f
}

// prepare is everything a compaction does before the model call: the
// path, the per-entry messages, tool-output pruning, token accounting, the
// cut point and the serialised transcript of what will be summarised.
func prepare(b *testing.B, f *session.File, ctx []session.Message) {
	path := f.ActivePath()
	msgs := f.EntryMessages(path)
	_ = Prune(path, msgs, 1)
	u := ContextUsage(ctx, 0)
	p, err := Prepare(path, msgs, Defaults(), u, 200_000)
	if err != nil {
		b.Fatal(err)
	}
	if s := Serialize(p.ToSummarize, 200_000-16384); len(s) < 100_000 {
		b.Fatalf("transcript of %d bytes", len(s))
	}
}

// BenchmarkPrepare200k is the preparation of a compaction of a
// 200,000-token session in a running agent, whose context was built when
// the session was loaded (target: ≤ 20 ms).
func BenchmarkPrepare200k(b *testing.B) {
	f := longSession(b, 200_000)
	ctx := f.BuildContext().Messages
	b.ResetTimer()
	stop := benchcpu.Start(b)
	defer stop()
	for b.Loop() {
		prepare(b, f, ctx)
	}
}

// BenchmarkPrepare200kCold is the same on a session parsed just before,
// whose entries have never been decoded.
func BenchmarkPrepare200kCold(b *testing.B) {
	data, err := os.ReadFile(longSession(b, 200_000).Path())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		f, err := session.Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := benchcpu.Now()
		prepare(b, f, nil)
		cpu += benchcpu.Now() - start
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}
