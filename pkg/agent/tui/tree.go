package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/export"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// The session tree: the selector, moves with or without a branch summary, and the background tasks they and compaction run.

// treeHidden is the default filter of the tree selector.
func treeHidden(e *session.Entry, leaf string) bool {
	switch e.Type {
	case session.TypeLabel, session.TypeCustom, session.TypeModelChange, session.TypeThinkingLevelChange,
		session.TypeSessionInfo, session.TypeTitle, session.TypeTitleChange, session.TypeModeChange:
		return true
	case session.TypeMessage:
		if e.ID == leaf {
			return false
		}
		var w struct {
			Message json.RawMessage `json:"message"`
		}
		if e.Decode(&w) != nil {
			return false
		}
		msg, err := session.DecodeMessage(w.Message)
		if err != nil || msg.LLM == nil || msg.LLM.Role != llm.RoleAssistant {
			return false
		}
		if s := msg.LLM.StopReason; s != llm.StopEnd && s != llm.StopToolUse && s != "" {
			return false
		}
		for _, c := range msg.LLM.Content {
			if c.Type != llm.ContentToolCall {
				return false
			}
		}
		return true
	}
	return false
}

// openTree is the session tree selector: an indented list, the
// active path marked •; a branch point indents its children.
func (m *model) openTree() tea.Cmd {
	if m.running {
		return m.fail(errBusy)
	}
	sf := m.ag.Session
	entries := sf.Entries()
	if len(entries) == 0 {
		return m.info("The session is empty.")
	}
	leaf := sf.Leaf()
	onPath := map[string]bool{}
	for _, e := range sf.ActivePath() {
		onPath[e.ID] = true
	}
	children := map[string][]*session.Entry{}
	byID := map[string]bool{}
	for _, e := range entries {
		byID[e.ID] = true
	}
	var roots []*session.Entry
	for _, e := range entries {
		if e.ParentID == "" || !byID[e.ParentID] {
			roots = append(roots, e)
		} else {
			children[e.ParentID] = append(children[e.ParentID], e)
		}
	}
	p := &picker{title: "Session tree", onPick: func(it pickItem) tea.Cmd { return m.navigate(it.value) }}
	var walk func(list []*session.Entry, depth int)
	walk = func(list []*session.Entry, depth int) {
		d := depth
		if len(list) > 1 {
			d++
		}
		// Iterative along single-child chains, recursive at branch points.
		for _, e := range list {
			for cur := e; cur != nil; {
				if !treeHidden(cur, leaf) {
					role, text := export.EntryText(cur)
					label := strings.Repeat("  ", d) + role + ": " + oneLine(text, 120)
					if cur.ID == leaf {
						label += styleNotice.Render("  ← current")
					}
					p.items = append(p.items, pickItem{label: label, value: cur.ID, active: onPath[cur.ID]})
				}
				kids := children[cur.ID]
				if len(kids) == 1 {
					cur = kids[0]
					continue
				}
				if len(kids) > 1 {
					walk(kids, d)
				}
				cur = nil
			}
		}
	}
	walk(roots, 0)
	m.openPicker(p)
	// The cursor starts on the current leaf (the last active row).
	for i, it := range p.items {
		if it.value == leaf {
			p.cursor = i
		}
	}
	return nil
}

// navigate moves the leaf to id: a user or custom message puts its
// text in the editor and the leaf on its parent. With branchSummary.enabled
// the user chooses first whether the branch left behind is summarised.
func (m *model) navigate(id string) tea.Cmd {
	if !m.ag.Compaction.BranchSummaryEnabled || id == m.ag.Session.Leaf() {
		return m.navigateNow(id, agent.NavigateOptions{})
	}
	p := &picker{title: "Summarize the branch you leave?", onPick: func(it pickItem) tea.Cmd {
		switch it.value {
		case "summary":
			return m.navigateSummarized(id, "")
		case "custom":
			m.pendingNav = id
			return m.info("Type the instructions for the branch summary, then Enter.")
		}
		return m.navigateNow(id, agent.NavigateOptions{})
	}}
	p.items = []pickItem{{label: "No summary", value: "none"}, {label: "Summarize", value: "summary"},
		{label: "Summarize with custom prompt", value: "custom"}}
	m.openPicker(p)
	return nil
}

// navigateNow moves without a model call.
func (m *model) navigateNow(id string, opt agent.NavigateOptions) tea.Cmd {
	nav, err := m.ag.NavigateTree(m.ctx, id, opt)
	return m.navigated(nav, err)
}

func (m *model) navigated(nav agent.Navigation, err error) tea.Cmd {
	if err != nil {
		return m.fail(err.Error())
	}
	if nav.Noop {
		return m.info(agent.NoopText)
	}
	if nav.Prefill != "" {
		m.editor.SetValue(nav.Prefill)
		m.grow()
	}
	return m.info(fmt.Sprintf("Moved in the tree · %d messages in context", m.ag.MessageCount()))
}

// navResultMsg ends a summarised tree move.
type navResultMsg struct {
	id  int
	nav agent.Navigation
	err error
}

// navigateSummarized moves to id with a branch summary, in the background:
// esc cancels the summary, applies no move and reopens the tree.
func (m *model) navigateSummarized(id, instructions string) tea.Cmd {
	ag := m.ag
	m.background("Summarizing the branch… · esc to cancel", func(ctx context.Context, rid int) tea.Msg {
		nav, err := ag.NavigateTree(ctx, id, agent.NavigateOptions{Summarize: true, CustomInstructions: instructions})
		if err != nil && ctx.Err() != nil {
			err = context.Canceled
		}
		return navResultMsg{id: rid, nav: nav, err: err}
	})
	return nil
}

// background runs work off the UI loop as a task esc cancels (like a
// run); its message comes back through send, tagged with the task's id.
func (m *model) background(notice string, work func(ctx context.Context, id int) tea.Msg) {
	ctx, cancel := context.WithCancel(m.ctx)
	done := make(chan struct{})
	m.runID++
	m.running, m.cancel, m.done, m.notice = true, cancel, done, notice
	send, id := m.send, m.runID
	go func() {
		defer close(done)
		send(work(ctx, id))
	}()
}

// backgroundDone settles the task whose message carries id; false for a
// stale message.
func (m *model) backgroundDone(id int) bool {
	if id != m.runID || m.done == nil {
		return false
	}
	<-m.done
	m.running, m.cancel, m.done, m.notice = false, nil, nil, ""
	return true
}

func (m *model) navResult(msg navResultMsg) tea.Cmd {
	if !m.backgroundDone(msg.id) {
		return nil
	}
	if errors.Is(msg.err, context.Canceled) {
		return tea.Batch(m.info("Branch summary cancelled; nothing moved."), m.openTree())
	}
	return m.navigated(msg.nav, msg.err)
}
