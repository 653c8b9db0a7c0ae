package tui

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/ompgo/omp/pkg/llm"
)

// Rendering: the live view, the footer and the lines printed into the scrollback.

func (m *model) printAssistant(msg assistantMsg) tea.Cmd {
	text := m.assistantText(msg)
	if text == "" {
		return nil
	}
	return tea.Println(text)
}

// assistantText is a finalised assistant message as the transcript shows
// it ("" when it has nothing to show).
func (m *model) assistantText(msg assistantMsg) string {
	var out []string
	for _, b := range msg.blocks {
		switch b.kind {
		case llm.ContentThinking:
			if strings.TrimSpace(b.text) == "" {
				continue
			}
			if m.showThinking {
				out = append(out, styleThought.Render(m.wrap(b.text)))
			} else {
				out = append(out, styleThought.Render(fmt.Sprintf("∴ thought for %d lines (ctrl+t to show)", strings.Count(strings.TrimSpace(b.text), "\n")+1)))
			}
		case llm.ContentText:
			if t := strings.TrimSpace(b.text); t != "" {
				out = append(out, m.wrap(t))
			}
		}
	}
	switch msg.stop {
	case llm.StopError:
		out = append(out, styleError.Render("Error: "+msg.errMsg))
	case llm.StopAborted:
		// Esc aborts silently in the transcript; the session
		// records the interruption.
	}
	if len(out) == 0 {
		return ""
	}
	return "\n" + strings.Join(out, "\n")
}

// printCompacted shows the compaction divider or why it failed.
func (m *model) printCompacted(c compactedMsg) tea.Cmd {
	switch {
	case c.aborted:
		return m.info("Compaction cancelled")
	case c.err != "":
		return m.fail("Compaction failed: " + c.err)
	}
	m.lastSummary = c.summary
	return tea.Println(compactedLine(c.tokensBefore))
}

// compactedLine is the compaction divider.
func compactedLine(tokensBefore int) string {
	line := "── 📷 compacted · ctrl+o ──"
	if tokensBefore > 0 {
		line += styleDim.Render(fmt.Sprintf("  (%d tokens before)", tokensBefore))
	}
	return "\n" + styleNotice.Render(line)
}

func (m *model) wrap(s string) string {
	return lipgloss.NewStyle().Width(max(m.width-1, 20)).Render(s)
}

// toolLines is a finished tool call: name, argument summary, a preview of
// the result (first and last lines; ctrl+o expands).
func (m *model) toolLines(msg toolEndMsg, summary string) string {
	mark := styleOK.Render("✓")
	if msg.isError {
		mark = styleError.Render("✗")
	}
	head := mark + " " + styleTool.Render(msg.name) + " " + summary
	lines, hidden := preview(msg.output, m.expand)
	out := []string{head}
	for _, l := range lines {
		out = append(out, styleDim.Render("  "+truncate(l, m.width-3)))
	}
	if hidden > 0 {
		out = append(out, styleDim.Render(fmt.Sprintf("  … %d more lines (ctrl+o to expand)", hidden)))
	}
	return strings.Join(out, "\n")
}

func truncate(s string, n int) string {
	r := []rune(strings.ReplaceAll(s, "\t", "    "))
	if n < 4 || len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}

func indent(s, pre string) string {
	return pre + strings.ReplaceAll(s, "\n", "\n"+pre)
}

func (m *model) View() string {
	var b strings.Builder
	w := max(m.width-1, 20)
	if len(m.stream) > 0 {
		var parts []string
		for _, bl := range m.stream {
			switch bl.kind {
			case llm.ContentThinking:
				if m.showThinking {
					parts = append(parts, styleThought.Render(tail(bl.text, 6)))
				} else {
					parts = append(parts, styleThought.Render("∴ thinking…"))
				}
			case llm.ContentText:
				parts = append(parts, bl.text)
			case llm.ContentToolCall:
				parts = append(parts, styleTool.Render("⋯ "+bl.name)+" "+bl.text)
			}
		}
		text := lipgloss.NewStyle().Width(w).Render(strings.Join(parts, "\n"))
		// Keep the live area within the screen: the tail of a long answer.
		b.WriteString(tail(text, max(m.height-14, 4)) + "\n")
	}
	for _, t := range m.tools {
		b.WriteString(styleTool.Render("● "+t.name) + " " + truncate(t.summary, w-len(t.name)-3) + "\n")
		if t.output != "" {
			for _, l := range strings.Split(tail(strings.TrimRight(t.output, "\n"), 3), "\n") {
				b.WriteString(styleDim.Render("  "+truncate(l, w-2)) + "\n")
			}
		}
	}
	if m.bash != "" {
		b.WriteString(styleTool.Render("● $ ") + truncate(m.bash, w-4) + styleDim.Render("  esc to stop") + "\n")
	}
	if m.running && len(m.stream) == 0 && len(m.tools) == 0 {
		b.WriteString(styleDim.Render("Working…") + "\n")
	}
	if m.notice != "" {
		b.WriteString(styleNotice.Render(m.notice) + "\n")
	}
	for _, q := range m.queue {
		label := "steer"
		if q.kind == followUp {
			label = "follow-up"
		}
		b.WriteString(styleQueued.Render("↳ queued "+label+": ") + truncate(oneLine(q.text, 200), w-20) + "\n")
	}
	if m.picker != nil {
		b.WriteString(m.picker.view(w, max(m.height/2, 5)))
		return b.String()
	}
	b.WriteString(m.editor.View() + "\n")
	b.WriteString(m.footer())
	return b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[len(lines)-n:], "\n")
}

func (m *model) footer() string {
	parts := []string{m.ag.CurrentModel().Key()}
	if l := m.ag.CurrentThinkingLevel(); l != "" {
		parts = append(parts, "thinking "+l)
	}
	if m.running {
		parts = append(parts, "enter steer · alt+enter follow-up · esc abort")
	} else {
		parts = append(parts, "enter send · ctrl+j newline · /help")
	}
	return styleFooter.Render(strings.Join(parts, " · "))
}
