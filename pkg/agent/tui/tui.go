// Package tui is the agent's interactive mode: a terminal
// UI on the Charm stack (bubbletea, bubbles, lipgloss) that streams the
// assistant's answer, shows tool calls as they run, takes multi-line
// input, queues steering and follow-up messages while a run streams,
// aborts on Esc, and offers the v1 slash commands, a model picker
// and the session tree.
//
// It renders inline, not on the alternate screen: finished items
// are printed into the terminal's scrollback, and only the live part (the
// streaming message, running tools, queued messages, the editor) is
// redrawn below them.
package tui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/textarea"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tools"
	"github.com/ompgo/omp/pkg/llm"
)

// Options configure Run. Agent is required; the callbacks are how the
// caller (internal/cli) provides what depends on its configuration.
type Options struct {
	// Agent drives the session; Run subscribes to its events and moves it
	// to another session file on a session switch (Agent.SetSession).
	// Manual compaction is its CompactNow (its Compactor).
	Agent *agent.Agent
	In    io.Reader
	Out   io.Writer
	// Cwd is the working directory (default paths of /export).
	Cwd string
	// SessionDir is where /new, /fork and /branch create session files
	// ("" = in memory).
	SessionDir string
	// SessionDirs is the /resume scope (the current project's).
	SessionDirs []string
	// Models are the models the picker offers.
	Models []llm.Model
	// SetModel switches the idle ag to the model named by selector
	// (provider/id or a bare id), with its provider and credential
	// (Agent.SetModel, which records the change in the session).
	SetModel func(ctx context.Context, ag *agent.Agent, selector string) error
	// Bash runs a user command (`!cmd`; exclude for `!!cmd`) and returns
	// its result and bashExecution message (nil: `!` is not special).
	Bash func(ctx context.Context, command string, exclude bool) (tools.CommandResult, session.Message, error)
	// OnSwitch is told about every session the UI switches to.
	OnSwitch func(sf *session.File)
	// Prompts are submitted one after the other at start (the positional
	// messages of `omp [messages...]`).
	Prompts []string
	// Version is shown in the banner.
	Version string
	// Getenv reads the environment (VISUAL, EDITOR; default os.Getenv).
	Getenv func(string) string
}

// Run runs the interactive mode until the user quits and returns the
// session in use at the end (for the caller to persist).
func Run(ctx context.Context, opt Options) (*session.File, error) {
	if opt.Agent == nil {
		return nil, errors.New("tui: no agent")
	}
	if opt.Getenv == nil {
		opt.Getenv = os.Getenv
	}
	m := newModel(ctx, opt)
	p := tea.NewProgram(m, tea.WithInput(opt.In), tea.WithOutput(opt.Out), tea.WithContext(ctx),
		tea.WithoutSignalHandler())
	// The loop's goroutine never blocks on the UI: its events go through
	// a queue that a pump forwards to the program.
	q := &pump{wake: make(chan struct{}, 1)}
	pctx, stop := context.WithCancel(ctx)
	pumped := make(chan struct{})
	go func() { defer close(pumped); q.run(pctx, p.Send) }()
	m.send = q.push
	m.ag = opt.Agent
	var restore func(string) string
	if m.ag.Secrets != nil {
		restore = m.ag.Secrets.Restore
	}
	unsubscribe := m.ag.Subscribe(func(e *agent.Event) {
		if msg := convert(e, restore); msg != nil {
			q.push(msg)
		}
	})
	m.switched()
	_, err := p.Run()
	m.stopRun()
	unsubscribe()
	stop()
	<-pumped
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		err = nil
	}
	return m.ag.Session, err
}

// kind of a queued message.
type queueKind int

const (
	steer queueKind = iota
	followUp
)

type queued struct {
	kind queueKind
	text string
}

// toolRun is a tool call that is executing.
type toolRun struct {
	id, name, summary, output string
}

type model struct {
	opt  Options
	ctx  context.Context
	ag   *agent.Agent
	send func(tea.Msg)

	width, height int
	editor        textarea.Model
	history       []string
	histIdx       int // len(history) = the draft

	running bool
	runID   int
	cancel  context.CancelFunc
	done    chan struct{}
	queue   []queued
	stream  []block
	tools   []*toolRun
	notice  string

	expand       bool // ctrl+o: full tool output
	showThinking bool // ctrl+t
	lastEsc      time.Time
	lastCtrlC    time.Time

	picker *picker
	// bash is the running user command ("" = none), bashCancel stops it;
	// pendingBash are bashExecution messages held back while a run is
	// active.
	bash        string
	bashCancel  context.CancelFunc
	pendingBash []session.Message
	// pendingNav is the tree target waiting for custom branch-summary
	// instructions: the next submitted text is those instructions.
	pendingNav string
	// lastTool is the output of the latest finished tool and lastSummary
	// the latest compaction summary (ctrl+o prints them whole).
	lastTool, lastSummary string
}

var (
	styleDim     = lipgloss.NewStyle().Faint(true)
	styleUser    = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("12"))
	styleTool    = lipgloss.NewStyle().Foreground(lipgloss.Color("13"))
	styleError   = lipgloss.NewStyle().Foreground(lipgloss.Color("9"))
	styleOK      = lipgloss.NewStyle().Foreground(lipgloss.Color("10"))
	styleNotice  = lipgloss.NewStyle().Foreground(lipgloss.Color("11"))
	styleQueued  = lipgloss.NewStyle().Foreground(lipgloss.Color("14"))
	styleFooter  = lipgloss.NewStyle().Faint(true)
	styleCursor  = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("12"))
	styleThought = lipgloss.NewStyle().Faint(true).Italic(true)
)

func newModel(ctx context.Context, opt Options) *model {
	ta := textarea.New()
	ta.Prompt = "│ "
	ta.Placeholder = "Ask anything · / for commands · ctrl+d to quit"
	ta.ShowLineNumbers = false
	ta.CharLimit = 0
	ta.MaxHeight = 10
	ta.SetHeight(1)
	ta.SetWidth(80)
	ta.FocusedStyle.CursorLine = lipgloss.NewStyle()
	// Enter is ours (submit / steer); ctrl+j inserts a newline (alt+enter
	// too while idle, see handleKey).
	ta.KeyMap.InsertNewline.SetKeys("ctrl+j")
	ta.Focus()
	return &model{opt: opt, ctx: ctx, editor: ta, width: 80, height: 24}
}

// switched tells the caller about the agent's (new) session.
func (m *model) switched() {
	if m.opt.OnSwitch != nil {
		m.opt.OnSwitch(m.ag.Session)
	}
}

func (m *model) Init() tea.Cmd {
	cmds := []tea.Cmd{textarea.Blink, tea.Println(styleDim.Render(m.banner()))}
	// A resumed session shows its context first, then how much of it
	// there is.
	if n := m.ag.MessageCount(); n > 0 {
		if t := m.transcript(); t != "" {
			cmds = append(cmds, tea.Println(t))
		}
		cmds = append(cmds, tea.Println("\n"+styleDim.Render(fmt.Sprintf("resumed: %d messages in context", n))))
	}
	// The command line's messages: the first runs, the rest follow up.
	for _, p := range m.opt.Prompts {
		switch {
		case strings.TrimSpace(p) == "":
		case !m.running:
			cmds = append(cmds, m.start(p))
		default:
			m.queue = append(m.queue, queued{kind: followUp, text: p})
			m.ag.FollowUp([]llm.Content{llm.Text(p)})
		}
	}
	return tea.Sequence(cmds...)
}

// banner is the first line: version, model and the session's id, as
// long a prefix of it as tells it apart from the other sessions of its
// directory.
func (m *model) banner() string {
	return fmt.Sprintf("omp %s · %s · session %s", m.opt.Version, m.ag.CurrentModel().Key(), session.ShortID(m.ag.Session))
}

// start prints the user's message and runs a prompt in the background.
func (m *model) start(text string) tea.Cmd {
	ctx, cancel := context.WithCancel(m.ctx)
	done := make(chan struct{})
	m.runID++
	send, id := m.send, m.runID
	err := m.ag.Start(ctx, []llm.Content{llm.Text(text)}, func(final *llm.Message, err error) {
		close(done)
		send(runDoneMsg{id: id, final: final, err: err})
	})
	if err != nil {
		cancel()
		return tea.Println(styleError.Render(err.Error()))
	}
	m.running, m.cancel, m.done, m.stream, m.tools, m.notice = true, cancel, done, nil, nil, ""
	return tea.Println(userLine(text))
}

func userLine(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if i == 0 {
			lines[i] = styleUser.Render("› " + l)
		} else {
			lines[i] = styleUser.Render("  " + l)
		}
	}
	return "\n" + strings.Join(lines, "\n")
}

// abort cancels the run; queued messages go back into the editor,
// steering first, before the draft.
func (m *model) abort() {
	if !m.running {
		return
	}
	steering, follow := m.ag.ClearQueues()
	m.queue = nil
	var texts []string
	for _, c := range append(steering, follow...) {
		texts = append(texts, contentText(c))
	}
	if len(texts) > 0 {
		if d := m.editor.Value(); d != "" {
			texts = append(texts, d)
		}
		m.editor.SetValue(strings.Join(texts, "\n"))
		m.grow()
	}
	m.ag.Abort()
	m.cancel()
}

func contentText(c []llm.Content) string {
	var parts []string
	for _, b := range c {
		if b.Type == llm.ContentText {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// stopRun aborts a run and waits for it to end (before a session switch
// or exit).
func (m *model) stopRun() {
	m.ag.ClearQueues()
	<-m.ag.Abort()
	if m.cancel != nil {
		m.cancel()
	}
	if m.done != nil {
		<-m.done
	}
	m.running, m.cancel, m.done = false, nil, nil
	m.queue = nil
	m.stream, m.tools = nil, nil
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.editor.SetWidth(max(msg.Width-2, 10))
		return m, nil
	case tea.KeyMsg:
		return m.handleKey(msg)
	case streamMsg:
		m.stream = msg.blocks
		return m, nil
	case assistantMsg:
		m.stream = nil
		return m, m.printAssistant(msg)
	case userMsg:
		// A queued message the agent has just delivered.
		for i, q := range m.queue {
			if q.text == msg.text {
				m.queue = append(m.queue[:i], m.queue[i+1:]...)
				return m, tea.Println(userLine(msg.text))
			}
		}
		return m, nil
	case toolStartMsg:
		m.tools = append(m.tools, &toolRun{id: msg.id, name: msg.name, summary: msg.summary})
		return m, nil
	case toolUpdateMsg:
		for _, t := range m.tools {
			if t.id == msg.id {
				t.output = msg.output
			}
		}
		return m, nil
	case toolEndMsg:
		summary := ""
		for i, t := range m.tools {
			if t.id == msg.id {
				summary = t.summary
				m.tools = append(m.tools[:i], m.tools[i+1:]...)
				break
			}
		}
		m.lastTool = msg.output
		return m, tea.Println(m.toolLines(msg, summary))
	case noticeMsg:
		m.notice = msg.text
		return m, nil
	case compactedMsg:
		m.notice = ""
		return m, m.printCompacted(msg)
	case runDoneMsg:
		return m, m.runDone(msg)
	case cmdResultMsg:
		return m, m.cmdResult(msg)
	case navResultMsg:
		return m, m.navResult(msg)
	case bashDoneMsg:
		return m, m.bashDone(msg)
	case editedMsg:
		if msg.err != nil {
			return m, tea.Println(styleError.Render("Editor: " + msg.err.Error()))
		}
		m.editor.SetValue(strings.TrimRight(msg.text, "\n"))
		m.grow()
		return m, nil
	}
	if shiftEnter(msg) && m.picker == nil {
		m.editor.InsertString("\n")
		m.grow()
		return m, nil
	}
	var cmd tea.Cmd
	m.editor, cmd = m.editor.Update(msg)
	return m, cmd
}

// runDone delivers the next queued message (steering first) or goes
// idle.
func (m *model) runDone(msg runDoneMsg) tea.Cmd {
	if msg.id != m.runID || m.done == nil {
		return nil // a run stopped by a session switch
	}
	<-m.done
	m.running, m.cancel, m.done, m.stream, m.tools, m.notice = false, nil, nil, nil, nil, ""
	var cmds []tea.Cmd
	cmds = append(cmds, m.flushBash())
	if msg.err != nil {
		cmds = append(cmds, tea.Println(styleError.Render("Error: "+msg.err.Error())))
	}
	// The agent delivered the queued messages it could; what is left (the
	// run was aborted) waits in the agent for the next prompt.
	if s, f := m.ag.QueuedCounts(); s+f == 0 {
		m.queue = nil
	}
	return tea.Sequence(cmds...)
}

// grow fits the editor's height to its content.
func (m *model) grow() {
	m.editor.SetHeight(min(max(m.editor.LineCount(), 1), 10))
}

// submit handles Enter: a trailing backslash continues the line;
// otherwise the text is a slash command, user bash, a prompt, or — while
// a run streams — a queued steering or follow-up message.
func (m *model) submit(kind queueKind) tea.Cmd {
	v := m.editor.Value()
	if kind == steer && strings.HasSuffix(v, "\\") && m.editor.Line() == m.editor.LineCount()-1 {
		m.editor.SetValue(strings.TrimSuffix(v, "\\") + "\n")
		m.grow()
		return nil
	}
	text := strings.TrimSpace(v)
	if text == "" {
		return nil
	}
	m.editor.Reset()
	m.grow()
	if len(m.history) == 0 || m.history[len(m.history)-1] != text {
		m.history = append(m.history, text)
	}
	m.histIdx = len(m.history)
	if id := m.pendingNav; id != "" && !m.running {
		m.pendingNav = ""
		return m.navigateSummarized(id, text)
	}
	if strings.HasPrefix(text, "/") {
		return m.command(text)
	}
	if strings.HasPrefix(text, "!") && m.opt.Bash != nil {
		return m.runBash(text)
	}
	if m.running {
		m.queue = append(m.queue, queued{kind: kind, text: text})
		content := []llm.Content{llm.Text(text)}
		if kind == steer {
			m.ag.Steer(content)
		} else {
			m.ag.FollowUp(content)
		}
		return nil
	}
	return m.start(text)
}

// bashDoneMsg ends a user command.
type bashDoneMsg struct {
	command string
	exclude bool
	res     tools.CommandResult
	msg     session.Message
	err     error
}

// runBash runs `!cmd` (`!!cmd`: excluded from the context) in the
// background. It never starts a run; its bashExecution message
// joins the session now, or after the active run.
func (m *model) runBash(text string) tea.Cmd {
	exclude := strings.HasPrefix(text, "!!")
	command := strings.TrimSpace(strings.TrimLeft(text, "!"))
	if command == "" {
		return nil
	}
	if m.bash != "" {
		return tea.Println(styleError.Render("A command is already running (esc stops it)."))
	}
	ctx, cancel := context.WithCancel(m.ctx)
	m.bash, m.bashCancel = command, cancel
	run, send := m.opt.Bash, m.send
	go func() {
		defer cancel()
		res, msg, err := run(ctx, command, exclude)
		send(bashDoneMsg{command: command, exclude: exclude, res: res, msg: msg, err: err})
	}()
	return nil
}

func (m *model) bashDone(d bashDoneMsg) tea.Cmd {
	m.bash, m.bashCancel = "", nil
	if d.err != nil {
		return tea.Println(styleError.Render("$ " + d.command + ": " + d.err.Error()))
	}
	m.lastTool = d.res.Output
	m.pendingBash = append(m.pendingBash, d.msg)
	var flush tea.Cmd
	if !m.running {
		flush = m.flushBash()
	}
	return tea.Sequence(tea.Println(m.bashLines(d.command, d.exclude, d.res)), flush)
}

// bashLines is a finished user command: the command, a preview of its
// output, and how it ended when not with exit code 0.
func (m *model) bashLines(command string, exclude bool, res tools.CommandResult) string {
	head := styleTool.Render("$ ") + command
	if exclude {
		head += styleDim.Render("  (not sent to the model)")
	}
	out := []string{"\n" + head}
	lines, hidden := preview(res.Output, m.expand)
	for _, l := range lines {
		out = append(out, styleDim.Render("  "+truncate(l, m.width-3)))
	}
	if hidden > 0 {
		out = append(out, styleDim.Render(fmt.Sprintf("  … %d more lines (ctrl+o to expand)", hidden)))
	}
	switch {
	case res.Cancelled:
		out = append(out, styleNotice.Render("  (command cancelled)"))
	case res.ExitCode != nil && *res.ExitCode != 0:
		out = append(out, styleError.Render(fmt.Sprintf("  exit code %d", *res.ExitCode)))
	}
	return strings.Join(out, "\n")
}

// flushBash appends the held-back bashExecution messages.
func (m *model) flushBash() tea.Cmd {
	pending := m.pendingBash
	m.pendingBash = nil
	for _, msg := range pending {
		if err := m.ag.AppendMessage(msg); err != nil {
			return tea.Println(styleError.Render("Saving the command failed: " + err.Error()))
		}
	}
	return nil
}

// editedMsg returns the draft from the external editor.
type editedMsg struct {
	text string
	err  error
}

// externalEditor opens the draft in $VISUAL or $EDITOR (ctrl+g); the
// UI gives the terminal to it and takes the file's text back.
func (m *model) externalEditor() tea.Cmd {
	name := cmp.Or(m.opt.Getenv("VISUAL"), m.opt.Getenv("EDITOR"))
	if name == "" {
		return tea.Println(styleError.Render("Set VISUAL or EDITOR to edit the message in an editor."))
	}
	f, err := os.CreateTemp("", "omp-draft-*.md")
	if err != nil {
		return tea.Println(styleError.Render("Editor: " + err.Error()))
	}
	path := f.Name()
	_, err = f.WriteString(m.editor.Value())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return tea.Println(styleError.Render("Editor: " + err.Error()))
	}
	args := strings.Fields(name)
	c := exec.Command(args[0], append(args[1:], path)...)
	return tea.ExecProcess(c, func(err error) tea.Msg {
		defer os.Remove(path)
		if err != nil {
			return editedMsg{err: err}
		}
		b, err := os.ReadFile(path)
		return editedMsg{text: string(b), err: err}
	})
}
