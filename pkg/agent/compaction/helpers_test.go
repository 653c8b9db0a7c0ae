package compaction

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// builder appends entries to a real session file with a ticking clock.
type builder struct {
	t  *testing.T
	f  *session.File
	ms int64
}

func newBuilder(t *testing.T) *builder {
	b := &builder{t: t, ms: 1_700_000_000_000}
	f, err := session.Create(t.TempDir(), "/p", session.Options{Now: func() time.Time { return time.UnixMilli(b.ms) }})
	if err != nil {
		t.Fatal(err)
	}
	b.f = f
	return b
}

func (b *builder) add(m *llm.Message) string {
	b.t.Helper()
	b.ms += 1000
	m.Timestamp = b.ms
	e, err := b.f.AppendMessage(session.NewMessage(m, nil))
	if err != nil {
		b.t.Fatal(err)
	}
	return e.ID
}

func (b *builder) user(text string) string {
	return b.add(&llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text(text)}})
}

func (b *builder) asst(text string, ctxTokens int64, calls ...llm.Content) string {
	m := &llm.Message{Role: llm.RoleAssistant, Provider: "fake", Model: "m", API: llm.APIAnthropic,
		Usage: llm.Usage{Input: ctxTokens}, StopReason: llm.StopEnd}
	if text != "" {
		m.Content = append(m.Content, llm.Text(text))
	}
	if len(calls) > 0 {
		m.Content = append(m.Content, calls...)
		m.StopReason = llm.StopToolUse
	}
	return b.add(m)
}

func (b *builder) result(id, tool, text string) string {
	return b.add(&llm.Message{Role: llm.RoleToolResult, ToolCallID: id, ToolName: tool, Content: []llm.Content{llm.Text(text)}})
}

func (b *builder) entry(typ string, fields any) string {
	b.t.Helper()
	b.ms += 1000
	e, err := b.f.Append(typ, fields)
	if err != nil {
		b.t.Fatal(err)
	}
	return e.ID
}

func (b *builder) path() ([]*session.Entry, []session.Message) {
	p := b.f.ActivePath()
	return p, b.f.EntryMessages(p)
}

func call(id, name, args string) llm.Content { return llm.ToolCall(id, name, json.RawMessage(args)) }

// words returns n tokens' worth of text (4 characters a token).
func words(n int) string { return strings.Repeat("abcd", n) }
