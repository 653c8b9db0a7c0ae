package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ompgo/omp/pkg/agent/export"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// commandHelp is /help: the v1 slash commands and keys.
var commandHelp = []string{
	"/model [selector]    pick a model (alt+m), or switch to selector; /switch <selector> too",
	"/new                 start a new session",
	"/resume              open another session of this project",
	"/tree                move within the session tree (double esc on an empty editor)",
	"/branch              start a new session from an earlier message of this one",
	"/fork                copy this session into a new one and continue there",
	"/rename <name>       name this session",
	"/export [path]       write this session as HTML",
	"/compact [focus]     summarise older messages to free context",
	"/help                this list",
	"!cmd                 run a shell command; its output goes to the model with the next prompt (!!cmd: it does not)",
	"/exit                quit (also ctrl+d on an empty editor, or ctrl+c twice)",
	"",
	"enter send · ctrl+j, alt+enter or a trailing \\ newline · while running: enter steer, alt+enter/ctrl+q follow-up",
	"esc abort (queued messages return to the editor) · ctrl+c clear · ctrl+o expand tool output · ctrl+t thinking",
	"ctrl+p next model · ctrl+g edit in $VISUAL/$EDITOR · up/down history · ctrl+z suspend",
}

// cmdResultMsg ends a command that ran in the background (/compact).
type cmdResultMsg struct {
	id     int
	result json.RawMessage
	err    error
}

func (m *model) info(s string) tea.Cmd { return tea.Println(styleDim.Render(s)) }
func (m *model) fail(s string) tea.Cmd { return tea.Println(styleError.Render(s)) }

// errBusy refuses a command while a run streams.
const errBusy = "The agent is running: wait for it to finish or press esc to abort first."

func (m *model) command(text string) tea.Cmd {
	name, arg, _ := strings.Cut(text, " ")
	arg = strings.TrimSpace(arg)
	echo := tea.Println("\n" + styleDim.Render(text))
	var cmd tea.Cmd
	switch name {
	case "/help":
		cmd = m.info(strings.Join(commandHelp, "\n"))
	case "/exit", "/quit":
		return tea.Quit
	case "/model", "/switch":
		switch {
		case arg == "" && name == "/model":
			cmd = m.openModelPicker()
		case arg == "":
			cmd = m.fail("Usage: /switch <provider/model>")
		default:
			cmd = m.setModel(arg)
		}
	case "/new":
		m.stopRun()
		sf, err := session.Create(m.opt.SessionDir, m.opt.Cwd, session.Options{})
		if err != nil {
			cmd = m.fail("New session failed: " + err.Error())
			break
		}
		cmd = m.switchTo(sf, true, false, "New session "+session.ShortID(sf))
	case "/resume":
		cmd = m.openResume()
	case "/tree":
		cmd = m.openTree()
	case "/branch":
		cmd = m.openBranch()
	case "/fork":
		cmd = m.fork()
	case "/rename":
		cmd = m.rename(arg)
	case "/export":
		cmd = m.export(arg)
	case "/compact":
		cmd = m.compact(arg)
	default:
		cmd = m.fail(fmt.Sprintf("Unknown command: %s (try /help)", name))
	}
	return tea.Sequence(echo, cmd)
}

// switchTo makes sf the session (the reference's switchSession): stop the run,
// clear the queues, flush the old file, rebuild the context, restore the
// session's model and thinking level. fresh records the current model and
// thinking level in a new session instead. show prints the session's
// conversation first, as a resume at start does, when the screen does not
// already hold it.
func (m *model) switchTo(sf *session.File, fresh, show bool, note string) tea.Cmd {
	m.stopRun()
	ag := m.ag
	if old := ag.Session; old != sf && old.Path() != "" && hasMessages(old) {
		if err := old.Persist(); err != nil {
			return m.fail("Saving the session failed: " + err.Error())
		}
	}
	if ag.Session != sf {
		ag.SetSession(sf)
	} else {
		ag.ReloadContext()
	}
	m.switched()
	var cmds []tea.Cmd
	replay := sf.BuildContext()
	model, level := ag.CurrentModel(), ag.CurrentThinkingLevel()
	switch {
	case fresh:
		if err := ag.SetModel(model, ag.Provider, ag.Credential, ""); err != nil {
			cmds = append(cmds, m.fail(err.Error()))
		}
		if level != "" {
			if err := ag.SetThinkingLevel(level); err != nil {
				cmds = append(cmds, m.fail(err.Error()))
			}
		}
	default:
		if replay.Model != "" && replay.Model != model.Key() && m.opt.SetModel != nil {
			if err := m.opt.SetModel(m.ctx, ag, replay.Model); err != nil {
				cmds = append(cmds, m.fail("Keeping "+model.Key()+": "+err.Error()))
			}
		}
		if replay.ThinkingLevel != "" && replay.ThinkingLevel != level {
			// Restored, not changed: nothing to record.
			ag.ThinkingLevel = replay.ThinkingLevel
		}
	}
	n := ag.MessageCount()
	if show && n > 0 {
		if t := m.transcript(); t != "" {
			cmds = append(cmds, tea.Println(t))
		}
	}
	return tea.Sequence(append(cmds, m.info(fmt.Sprintf("%s · %d messages in context · %s", note, n, ag.CurrentModel().Key())))...)
}

func hasMessages(sf *session.File) bool {
	for _, e := range sf.Entries() {
		if e.Type == session.TypeMessage {
			return true
		}
	}
	return false
}

func (m *model) setModel(sel string) tea.Cmd {
	if m.running {
		return m.fail(errBusy)
	}
	if m.opt.SetModel == nil {
		return m.fail("Switching models is not available.")
	}
	if sel == m.ag.CurrentModel().Key() {
		return m.info("Model: " + sel + " (unchanged)")
	}
	if err := m.opt.SetModel(m.ctx, m.ag, sel); err != nil {
		return m.fail(err.Error())
	}
	return m.info("Model: " + m.ag.CurrentModel().Key())
}

func (m *model) openModelPicker() tea.Cmd {
	if m.running {
		return m.fail(errBusy)
	}
	if len(m.opt.Models) == 0 {
		return m.fail("No models with credentials.")
	}
	p := &picker{title: "Select a model", onPick: func(it pickItem) tea.Cmd { return m.setModel(it.value) }}
	for _, md := range m.opt.Models {
		label := md.Key()
		if md.Name != "" && md.Name != md.ID {
			label += "  " + styleDim.Render(md.Name)
		}
		p.items = append(p.items, pickItem{label: label, value: md.Key(), active: md.Key() == m.ag.CurrentModel().Key()})
	}
	m.openPicker(p)
	return nil
}

// cycleModel switches to the next model of the picker's list (ctrl+p).
func (m *model) cycleModel() tea.Cmd {
	if len(m.opt.Models) < 2 {
		return nil
	}
	next := m.opt.Models[0]
	for i, md := range m.opt.Models {
		if md.Key() == m.ag.CurrentModel().Key() {
			next = m.opt.Models[(i+1)%len(m.opt.Models)]
		}
	}
	return m.setModel(next.Key())
}

// userMessage reports whether e is a user message entry, with its text.
func userMessage(e *session.Entry) (string, bool) {
	role, text := export.EntryText(e)
	return text, e.Type == session.TypeMessage && role == string(llm.RoleUser)
}

// openBranch picks a user message of the active path and starts a new
// session from just before it, with its text in the editor.
func (m *model) openBranch() tea.Cmd {
	if m.running {
		return m.fail(errBusy)
	}
	p := &picker{title: "Branch from which message?", onPick: func(it pickItem) tea.Cmd { return m.branch(it.value) }}
	for _, e := range m.ag.Session.ActivePath() {
		if text, ok := userMessage(e); ok {
			p.items = append(p.items, pickItem{label: oneLine(text, 150), value: e.ID})
		}
	}
	if len(p.items) == 0 {
		return m.info("No messages to branch from.")
	}
	m.openPicker(p)
	p.cursor = len(p.items) - 1
	return nil
}

func (m *model) branch(id string) tea.Cmd {
	src := m.ag.Session
	e, ok := src.Entry(id)
	if !ok {
		return m.fail("Entry " + id + " not found")
	}
	text, _ := userMessage(e)
	sf := src
	note := "Branched in place (in-memory session)"
	if src.Path() != "" {
		// A new file holding the path before the message.
		if err := src.Persist(); err != nil {
			return m.fail("Branch failed: " + err.Error())
		}
		nf, err := src.BranchInto(m.sessionDir(src), e.ParentID)
		if err != nil {
			return m.fail("Branch failed: " + err.Error())
		}
		sf, note = nf, "Branched into session "+session.ShortID(nf)
	} else if e.ParentID == "" {
		sf.ResetLeaf()
	} else if err := sf.Branch(e.ParentID); err != nil {
		return m.fail(err.Error())
	}
	cmd := m.switchTo(sf, false, true, note)
	m.editor.SetValue(text)
	m.grow()
	return cmd
}

// sessionDir is where a session derived from src goes: next to it, else
// the configured directory.
func (m *model) sessionDir(src *session.File) string {
	if src.Path() != "" {
		return filepath.Dir(src.Path())
	}
	return m.opt.SessionDir
}

func (m *model) fork() tea.Cmd {
	if m.running {
		return m.fail("Cannot fork while the agent is running.")
	}
	src := m.ag.Session
	if src.Path() == "" || src.Persist() != nil {
		return m.fail("Fork failed (session not persisted or cancelled)")
	}
	sf, err := session.Fork(src.Path(), m.sessionDir(src), "", nil)
	if err != nil {
		return m.fail("Fork failed: " + err.Error())
	}
	return m.switchTo(sf, false, false, "Forked into session "+session.ShortID(sf))
}

func (m *model) openResume() tea.Cmd {
	cur := m.ag.Session.Path()
	p := &picker{title: "Resume a session", onPick: func(it pickItem) tea.Cmd {
		if it.value == m.ag.Session.Path() {
			return m.info("Already in this session")
		}
		sf, err := session.Open(it.value)
		if err != nil {
			return m.fail("Cannot open session: " + err.Error())
		}
		return m.switchTo(sf, false, true, "Resumed session "+session.ShortID(sf))
	}}
	for i, info := range session.List(m.opt.SessionDirs...) {
		if i == 50 {
			break
		}
		sf, err := session.Open(info.Path)
		if err != nil {
			continue
		}
		title, count := sf.Header().Title, 0
		for _, e := range sf.Entries() {
			if text, ok := userMessage(e); ok {
				if title == "" {
					title = text
				}
			}
			if e.Type == session.TypeMessage {
				count++
			}
		}
		if title == "" {
			title = "(empty)"
		}
		label := fmt.Sprintf("%s  %-60s  %d msgs", info.ModTime.Format("2006-01-02 15:04"), oneLine(title, 60), count)
		p.items = append(p.items, pickItem{label: label, value: info.Path, active: info.Path == cur})
	}
	if len(p.items) == 0 {
		return m.info("No saved sessions in this project.")
	}
	m.openPicker(p)
	return nil
}

// rename names the session: the header's title.
func (m *model) rename(name string) tea.Cmd {
	if err := m.ag.Session.SetTitle(name); err != nil {
		return m.fail(err.Error())
	}
	return m.info("Session renamed to " + name)
}

func (m *model) export(arg string) tea.Cmd {
	fields := strings.Fields(arg)
	path := ""
	if len(fields) > 0 {
		path = fields[0]
	}
	switch path {
	case "--copy", "copy", "clipboard":
		return m.fail("/export writes a file; copying the session is /dump, which is not available yet")
	}
	sf := m.ag.Session
	if sf.Path() == "" {
		return m.fail("Cannot export in-memory session to HTML")
	}
	if path == "" {
		path = filepath.Join(m.opt.Cwd, "omp-session-"+sf.Header().ID+".html")
	} else if !filepath.IsAbs(path) {
		path = filepath.Join(m.opt.Cwd, path)
	}
	if err := export.HTML(sf, m.ag.SystemPrompt, path); err != nil {
		return m.fail("Export failed: " + err.Error())
	}
	return m.info("Session exported to: " + path)
}

// compact runs the manual compaction in the background; esc cancels it.
func (m *model) compact(instructions string) tea.Cmd {
	// A manual compaction aborts the run first.
	m.stopRun()
	ag := m.ag
	m.background("Compacting… · esc to cancel", func(ctx context.Context, id int) tea.Msg {
		res, err := ag.CompactNow(ctx, instructions)
		if err != nil && ctx.Err() != nil {
			err = errors.New("cancelled")
		}
		return cmdResultMsg{id: id, result: res, err: err}
	})
	return nil
}

func (m *model) cmdResult(msg cmdResultMsg) tea.Cmd {
	if !m.backgroundDone(msg.id) {
		return nil
	}
	c := compactionResult(msg.result)
	if msg.err != nil {
		c.err = msg.err.Error()
	}
	// The Compactor has rebuilt the agent's context from the session.
	return m.printCompacted(c)
}
