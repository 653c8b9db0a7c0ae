package tui

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
)

// pickItem is one selectable row.
type pickItem struct {
	label string
	value string
	// active marks the current model, session or the tree's active path.
	active bool
}

// picker is a filterable list that replaces the editor while open: type
// to filter (every space-separated token must match), Up/Down to move
// (wrapping), Enter to choose, Esc to clear the filter or close.
type picker struct {
	title  string
	items  []pickItem
	filter string
	cursor int
	onPick func(it pickItem) tea.Cmd
}

func (p *picker) visible() []pickItem {
	if p.filter == "" {
		return p.items
	}
	tokens := strings.Fields(strings.ToLower(p.filter))
	var out []pickItem
	for _, it := range p.items {
		l := strings.ToLower(it.label + " " + it.value)
		ok := true
		for _, t := range tokens {
			if !strings.Contains(l, t) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, it)
		}
	}
	return out
}

func (p *picker) view(w, h int) string {
	var b strings.Builder
	b.WriteString(styleUser.Render(p.title))
	if p.filter != "" {
		b.WriteString("  " + styleNotice.Render("filter: "+p.filter))
	}
	b.WriteByte('\n')
	items := p.visible()
	if len(items) == 0 {
		b.WriteString(styleDim.Render("  (nothing matches)") + "\n")
	}
	start := 0
	if p.cursor >= h {
		start = p.cursor - h + 1
	}
	for i := start; i < len(items) && i < start+h; i++ {
		it := items[i]
		mark := "  "
		if it.active {
			mark = "• "
		}
		line := truncate(mark+it.label, w-2)
		if i == p.cursor {
			b.WriteString(styleCursor.Render("› "+line) + "\n")
		} else {
			b.WriteString("  " + line + "\n")
		}
	}
	b.WriteString(styleFooter.Render(fmt.Sprintf("%d/%d · ↑↓ move · enter choose · type to filter · esc close", min(p.cursor+1, len(items)), len(items))))
	return b.String()
}

func (m *model) pickerKey(k tea.KeyMsg) tea.Cmd {
	p := m.picker
	items := p.visible()
	switch k.String() {
	case "up", "ctrl+p":
		if len(items) > 0 {
			p.cursor = (p.cursor - 1 + len(items)) % len(items)
		}
	case "down", "ctrl+n":
		if len(items) > 0 {
			p.cursor = (p.cursor + 1) % len(items)
		}
	case "enter":
		if p.cursor < len(items) {
			m.picker = nil
			return p.onPick(items[p.cursor])
		}
	case "esc":
		if p.filter != "" {
			p.filter, p.cursor = "", 0
		} else {
			m.picker = nil
		}
	case "ctrl+c":
		m.picker = nil
	case "backspace":
		if r := []rune(p.filter); len(r) > 0 {
			p.filter, p.cursor = string(r[:len(r)-1]), 0
		}
	default:
		switch k.Type {
		case tea.KeyRunes:
			p.filter, p.cursor = p.filter+string(k.Runes), 0
		case tea.KeySpace:
			p.filter, p.cursor = p.filter+" ", 0
		}
	}
	return nil
}

// openPicker shows p with the cursor on its active item.
func (m *model) openPicker(p *picker) {
	for i, it := range p.items {
		if it.active {
			p.cursor = i
		}
	}
	m.picker = p
}
