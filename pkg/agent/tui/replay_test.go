package tui

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// sgr matches a colour or style escape.
var sgr = regexp.MustCompile("\x1b\\[[0-9;]*m")

// printed runs cmd (and the commands of a sequence or batch) and returns
// the text of each line it prints into the scrollback, in order, without
// styling.
func printed(t *testing.T, cmd tea.Cmd) []string {
	t.Helper()
	if cmd == nil {
		return nil
	}
	msg := cmd()
	v := reflect.ValueOf(msg)
	switch {
	case v.Kind() == reflect.Slice:
		var out []string
		for i := range v.Len() {
			if c, ok := v.Index(i).Interface().(tea.Cmd); ok {
				out = append(out, printed(t, c)...)
			}
		}
		return out
	case v.Kind() == reflect.Struct:
		if f := v.FieldByName("messageBody"); f.IsValid() {
			return []string{sgr.ReplaceAllString(f.String(), "")}
		}
	}
	return nil
}

func appendLLM(t *testing.T, sf *session.File, m *llm.Message) *session.Entry {
	t.Helper()
	msg, err := session.DecodeMessage(session.EncodeMessage(m, nil))
	if err != nil {
		t.Fatal(err)
	}
	e, err := sf.AppendMessage(msg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func resumedModel(t *testing.T, fill func(sf *session.File)) *model {
	t.Helper()
	dir := t.TempDir()
	sf, err := session.Create(filepath.Join(dir, "sessions"), dir, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fill(sf)
	ag := &agent.Agent{Session: sf, Model: testModel}
	m := newModel(context.Background(), Options{Agent: ag, Cwd: dir})
	m.ag = ag
	return m
}

// inOrder fails unless each of want occurs in text after the previous one.
func inOrder(t *testing.T, text string, want ...string) {
	t.Helper()
	at := 0
	for _, w := range want {
		i := strings.Index(text[at:], w)
		if i < 0 {
			t.Fatalf("%q missing (or out of order) in:\n%s", w, text)
		}
		at += i + len(w)
	}
}

func TestResumeShowsTheConversation(t *testing.T) {
	m := resumedModel(t, func(sf *session.File) {
		appendLLM(t, sf, &llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("list the files")}})
		appendLLM(t, sf, &llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopToolUse, Content: []llm.Content{
			llm.Text("Let me look."), llm.ToolCall("t1", "bash", json.RawMessage(`{"command":"ls -1"}`))}})
		appendLLM(t, sf, &llm.Message{Role: llm.RoleToolResult, ToolCallID: "t1", ToolName: "bash",
			Content: []llm.Content{llm.Text("a.go\nb.go")}})
		a := answer("There are two Go files.")
		appendLLM(t, sf, &a)
	})
	lines := printed(t, m.Init())
	all := strings.Join(lines, "\n")
	inOrder(t, all, "omp ", "› list the files", "Let me look.", "✓ bash ls -1", "a.go", "b.go",
		"There are two Go files.", "resumed: 4 messages in context")
	// The notice is the last line printed: the transcript ends right above
	// the editor.
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "resumed: 4 messages in context" {
		t.Fatalf("last printed line = %q", last)
	}
	if m.lastTool != "a.go\nb.go" {
		t.Fatalf("lastTool = %q", m.lastTool)
	}
}

func TestResumeAfterCompactionShowsTheSummaryThenTheKeptMessages(t *testing.T) {
	m := resumedModel(t, func(sf *session.File) {
		appendLLM(t, sf, &llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("old question")}})
		a := answer("old answer")
		appendLLM(t, sf, &a)
		kept := appendLLM(t, sf, &llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("kept question")}})
		a = answer("kept answer")
		appendLLM(t, sf, &a)
		if _, err := sf.Append(session.TypeCompaction, session.Compaction{Summary: "they talked", FirstKeptEntryID: kept.ID, TokensBefore: 1234}); err != nil {
			t.Fatal(err)
		}
		appendLLM(t, sf, &llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("new question")}})
	})
	all := strings.Join(printed(t, m.Init()), "\n")
	if strings.Contains(all, "old question") || strings.Contains(all, "old answer") {
		t.Fatalf("compacted messages shown:\n%s", all)
	}
	inOrder(t, all, "compacted", "1234 tokens before", "› kept question", "kept answer", "› new question",
		"resumed: 4 messages in context")
	if m.lastSummary != "they talked" {
		t.Fatalf("lastSummary = %q", m.lastSummary)
	}
}

func TestNewSessionPrintsNoTranscript(t *testing.T) {
	m := resumedModel(t, func(*session.File) {})
	lines := printed(t, m.Init())
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "omp ") {
		t.Fatalf("printed %q", lines)
	}
}

func TestResumeCommandShowsTheOtherConversation(t *testing.T) {
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions")
	other, err := session.Create(sessions, dir, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendLLM(t, other, &llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("earlier question")}})
	a := answer("earlier answer")
	appendLLM(t, other, &a)
	if err := other.Persist(); err != nil {
		t.Fatal(err)
	}
	cur, err := session.Create(sessions, dir, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ag := &agent.Agent{Session: cur, Model: testModel}
	m := newModel(context.Background(), Options{Agent: ag, Cwd: dir, SessionDir: sessions, SessionDirs: []string{sessions}})
	m.ag = ag
	m.openResume()
	if m.picker == nil {
		t.Fatal("no session picker")
	}
	var cmd tea.Cmd
	for _, it := range m.picker.items {
		if it.value == other.Path() {
			cmd = m.picker.onPick(it)
		}
	}
	if cmd == nil {
		t.Fatalf("the other session is not offered: %+v", m.picker.items)
	}
	all := strings.Join(printed(t, cmd), "\n")
	inOrder(t, all, "› earlier question", "earlier answer", "Resumed session")
}
