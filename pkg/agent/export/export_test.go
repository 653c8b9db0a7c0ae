package export

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// TestHTML: the page escapes every text (system prompt, user and
// assistant text, tool arguments and results), folds tool results (error
// ones marked) and creates the target's directory.
func TestHTML(t *testing.T) {
	dir := t.TempDir()
	sf, err := session.Create(filepath.Join(dir, "sessions"), dir, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*llm.Message{
		{Role: llm.RoleUser, Content: []llm.Content{llm.Text("show <b>html</b>")}},
		{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("<script>alert(1)</script>"),
			llm.ToolCall("c1", "bash", json.RawMessage(`{"command":"ls <dir>"}`))}, StopReason: llm.StopToolUse},
		{Role: llm.RoleToolResult, ToolCallID: "c1", ToolName: "bash", IsError: true, Content: []llm.Content{llm.Text("no such <dir>")}},
	} {
		if _, err := sf.AppendMessage(session.NewMessage(m, nil)); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out", "s.html")
	if err := HTML(sf, "sys & prompt", out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"&lt;script&gt;alert(1)", "show &lt;b&gt;html&lt;/b&gt;", "sys &amp; prompt",
		`→ bash {&#34;command&#34;:&#34;ls &lt;dir&gt;&#34;}`, `<div class="toolResult error">`,
		"<summary>bash result</summary><pre>no such &lt;dir&gt;</pre>", sf.Header().ID} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "<script>alert") || strings.Contains(s, "<b>html") {
		t.Errorf("page not escaped:\n%s", s)
	}
}

// TestEntryText: one line per entry, what the tree and pickers show.
func TestEntryText(t *testing.T) {
	dir := t.TempDir()
	sf, err := session.Create(filepath.Join(dir, "sessions"), dir, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := sf.AppendMessage(session.NewMessage(&llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopAborted,
		Content: []llm.Content{llm.Text("partial"), llm.ToolCall("c1", "read", json.RawMessage(`{}`))}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if role, text := EntryText(e); role != "assistant" || text != "partial [read] (aborted)" {
		t.Errorf("EntryText = %q, %q", role, text)
	}
	e, err = sf.AppendModelChange("fake", "m", "")
	if err != nil {
		t.Fatal(err)
	}
	if role, text := EntryText(e); role != session.TypeModelChange || text != "" {
		t.Errorf("model change: EntryText = %q, %q", role, text)
	}
}
