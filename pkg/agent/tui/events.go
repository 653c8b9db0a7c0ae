package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// The agent's events reach the UI as these messages. They are copies:
// the loop keeps mutating the partial message after Emit returns.

// block is one content block of a streaming or final assistant message.
type block struct {
	kind llm.ContentType
	text string // text, thinking, or the tool call's argument summary
	name string // tool name
}

// streamMsg is the assistant message so far (message_update).
type streamMsg struct{ blocks []block }

// userMsg is a user message the loop appended (a delivered queue item).
type userMsg struct{ text string }

// assistantMsg is a finalised assistant message (message_end).
type assistantMsg struct {
	blocks []block
	stop   llm.StopReason
	errMsg string
}

type toolStartMsg struct{ id, name, summary string }
type toolUpdateMsg struct{ id, output string }
type toolEndMsg struct {
	id, name, output string
	isError          bool
}

// noticeMsg is a retry notice; clear removes the current one.
type noticeMsg struct {
	text  string
	clear bool
}

// compactedMsg ends a compaction (auto_compaction_end, or /compact).
type compactedMsg struct {
	summary      string
	tokensBefore int
	err          string // "" on success
	aborted      bool
}

// compactionResult reads a CompactionResult object.
func compactionResult(raw json.RawMessage) compactedMsg {
	var r struct {
		Summary      string `json:"summary"`
		TokensBefore int    `json:"tokensBefore"`
	}
	_ = json.Unmarshal(raw, &r)
	return compactedMsg{summary: r.Summary, tokensBefore: r.TokensBefore}
}

// runDoneMsg ends a run started by the UI.
type runDoneMsg struct {
	id    int
	final *llm.Message
	err   error
}

// convert turns an agent event into a UI message (nil: nothing to show).
// restore is the display form of model text: secret placeholders back to
// their values; nil leaves text as it is.
func convert(e *agent.Event, restore func(string) string) any {
	msg := convertRaw(e)
	if restore == nil {
		return msg
	}
	fix := func(bs []block) []block {
		for i := range bs {
			bs[i].text = restore(bs[i].text)
		}
		return bs
	}
	switch v := msg.(type) {
	case streamMsg:
		v.blocks = fix(v.blocks)
		return v
	case assistantMsg:
		v.blocks = fix(v.blocks)
		return v
	case userMsg:
		v.text = restore(v.text)
		return v
	case toolStartMsg:
		v.summary = restore(v.summary)
		return v
	}
	return msg
}

func convertRaw(e *agent.Event) any {
	switch e.Type {
	case agent.EventMessageUpdate:
		if e.Assistant == nil || e.Assistant.Partial == nil {
			return nil
		}
		return streamMsg{blocks: blocks(e.Assistant.Partial)}
	case agent.EventMessageEnd:
		m, err := session.DecodeMessage(e.Message)
		if err != nil || m.LLM == nil {
			return nil
		}
		if m.LLM.Role == llm.RoleUser {
			return userMsg{text: contentText(m.LLM.Content)}
		}
		if m.LLM.Role != llm.RoleAssistant {
			return nil
		}
		return assistantMsg{blocks: blocks(m.LLM), stop: m.LLM.StopReason, errMsg: m.LLM.ErrorMessage}
	case agent.EventToolExecutionStart:
		return toolStartMsg{id: e.ToolCallID, name: e.ToolName, summary: argSummary(e.ToolName, e.Args)}
	case agent.EventToolExecutionUpdate:
		return toolUpdateMsg{id: e.ToolCallID, output: resultText(e.Result)}
	case agent.EventToolExecutionEnd:
		return toolEndMsg{id: e.ToolCallID, name: e.ToolName, output: resultText(e.Result), isError: e.IsError}
	case agent.EventAutoRetryStart:
		return noticeMsg{text: fmt.Sprintf("Retrying (%d/%d) in %ds: %s · esc to cancel", e.Attempt, e.MaxAttempts,
			(e.DelayMs+999)/1000, oneLine(e.ErrorMessage, 80))}
	case agent.EventAutoRetryEnd:
		return noticeMsg{clear: true}
	case agent.EventAutoCompactionStart:
		return noticeMsg{text: "Compacting the context (" + e.Reason + ")… · esc to cancel"}
	case agent.EventAutoCompactionEnd:
		if e.Result == nil && e.ErrorMessage == "" && !e.Aborted {
			return noticeMsg{clear: true} // nothing to compact
		}
		c := compactionResult(e.Result)
		c.err, c.aborted = e.ErrorMessage, e.Aborted
		return c
	}
	return nil
}

func blocks(m *llm.Message) []block {
	out := make([]block, 0, len(m.Content))
	for _, c := range m.Content {
		switch c.Type {
		case llm.ContentText:
			out = append(out, block{kind: c.Type, text: c.Text})
		case llm.ContentThinking:
			out = append(out, block{kind: c.Type, text: c.Thinking})
		case llm.ContentToolCall:
			out = append(out, block{kind: c.Type, name: c.Name, text: argSummary(c.Name, c.Arguments)})
		}
	}
	return out
}

// argSummary is a tool call's arguments in one short line: the command,
// path or pattern for the built-in tools, else the compact JSON.
func argSummary(tool string, args json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return oneLine(string(args), 100)
	}
	for _, k := range []string{"command", "pattern", "path", "file_path", "query"} {
		if s, ok := m[k].(string); ok && s != "" {
			if k == "pattern" {
				if p, ok := m["path"].(string); ok && p != "" {
					s += "  in " + p
				}
			}
			return oneLine(s, 100)
		}
	}
	if tool == "todo" {
		if ops, ok := m["ops"].([]any); ok {
			return fmt.Sprintf("%d op(s)", len(ops))
		}
	}
	b, _ := json.Marshal(m)
	return oneLine(string(b), 100)
}

// resultText is the text blocks of a tool result object {content, details}.
func resultText(raw json.RawMessage) string {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return ""
	}
	var parts []string
	for _, c := range r.Content {
		switch c.Type {
		case "text":
			parts = append(parts, c.Text)
		case "image":
			parts = append(parts, "[image]")
		}
	}
	return strings.Join(parts, "\n")
}

// oneLine collapses s to its first line, cut to n runes.
func oneLine(s string, n int) string {
	s = strings.TrimSpace(s)
	multi := false
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s, multi = strings.TrimSpace(s[:i]), true
	}
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	if multi {
		return s + " …"
	}
	return s
}

// preview is the first and last lines of a tool's output; full shows all.
func preview(out string, full bool) (lines []string, hidden int) {
	out = strings.TrimRight(out, "\n")
	if out == "" {
		return nil, 0
	}
	all := strings.Split(out, "\n")
	const head, tail = 3, 2
	if full || len(all) <= head+tail+1 {
		return all, 0
	}
	lines = append(lines, all[:head]...)
	lines = append(lines, all[len(all)-tail:]...)
	return lines, len(all) - head - tail
}

// pump forwards messages to the program without ever blocking the
// sender; consecutive stream snapshots collapse into the newest.
type pump struct {
	mu   sync.Mutex
	q    []tea.Msg
	wake chan struct{}
}

func (p *pump) push(msg tea.Msg) {
	p.mu.Lock()
	if _, ok := msg.(streamMsg); ok && len(p.q) > 0 {
		if _, ok := p.q[len(p.q)-1].(streamMsg); ok {
			p.q[len(p.q)-1] = msg
			p.mu.Unlock()
			return
		}
	}
	p.q = append(p.q, msg)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *pump) run(ctx context.Context, send func(tea.Msg)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
		p.mu.Lock()
		batch := p.q
		p.q = nil
		p.mu.Unlock()
		for _, msg := range batch {
			send(msg)
		}
	}
}
