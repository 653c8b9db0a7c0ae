package tui

import (
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// Key handling.

func (m *model) handleKey(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	if m.picker != nil {
		return m, m.pickerKey(k)
	}
	now := time.Now()
	switch k.String() {
	case "enter":
		return m, m.submit(steer)
	case "alt+enter":
		if m.running {
			return m, m.submit(followUp)
		}
		m.editor.InsertString("\n")
		m.grow()
		return m, nil
	case "ctrl+q":
		if m.running {
			return m, m.submit(followUp)
		}
		return m, nil
	case "esc":
		switch {
		case m.running:
			m.abort()
		case m.bashCancel != nil:
			m.bashCancel()
		case m.editor.Value() != "":
			m.editor.Reset()
			m.grow()
		case now.Sub(m.lastEsc) < 500*time.Millisecond:
			m.lastEsc = time.Time{}
			return m, m.openTree()
		default:
			m.lastEsc = now
		}
		return m, nil
	case "ctrl+c":
		if now.Sub(m.lastCtrlC) < 500*time.Millisecond {
			return m, tea.Quit
		}
		m.lastCtrlC = now
		switch {
		case m.editor.Value() != "":
			m.editor.Reset()
			m.grow()
		case m.running:
			m.abort()
		}
		return m, nil
	case "ctrl+d":
		if m.editor.Value() == "" {
			return m, tea.Quit
		}
	case "ctrl+z":
		return m, tea.Suspend
	case "ctrl+o":
		m.expand = !m.expand
		if m.expand && m.lastSummary != "" {
			s := m.lastSummary
			m.lastSummary = ""
			return m, tea.Println(styleDim.Render(m.wrap(s)))
		}
		if m.expand && m.lastTool != "" {
			return m, tea.Println(styleDim.Render(indent(strings.TrimRight(m.lastTool, "\n"), "  ")))
		}
		return m, nil
	case "ctrl+t":
		m.showThinking = !m.showThinking
		return m, nil
	case "ctrl+g":
		return m, m.externalEditor()
	case "alt+m", "ctrl+l":
		return m, m.openModelPicker()
	case "ctrl+p":
		return m, m.cycleModel()
	case "up":
		if m.editor.Line() == 0 && m.histIdx > 0 && (m.editor.Value() == "" || m.histIdx < len(m.history)) {
			m.histIdx--
			m.editor.SetValue(m.history[m.histIdx])
			m.grow()
			return m, nil
		}
	case "down":
		if m.histIdx < len(m.history) && m.editor.Line() == m.editor.LineCount()-1 {
			m.histIdx++
			if m.histIdx == len(m.history) {
				m.editor.Reset()
			} else {
				m.editor.SetValue(m.history[m.histIdx])
			}
			m.grow()
			return m, nil
		}
	}
	var cmd tea.Cmd
	m.editor, cmd = m.editor.Update(k)
	m.grow()
	return m, cmd
}

// shiftEnter reports whether msg is Shift+Enter, which bubbletea v1
// passes on as an unknown CSI sequence: CSI 13;2u (kitty, fixterms) or
// CSI 27;2;13~ (xterm modifyOtherKeys).
func shiftEnter(msg tea.Msg) bool {
	if _, ok := msg.(tea.KeyMsg); ok {
		return false
	}
	s, ok := msg.(fmt.Stringer)
	if !ok {
		return false
	}
	switch s.String() {
	case "?CSI[49 51 59 50 117]?", "?CSI[50 55 59 50 59 49 51 126]?":
		return true
	}
	return false
}
