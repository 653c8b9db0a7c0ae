package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/agent/compaction"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tools"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

var testModel = llm.Model{ID: "m1", Provider: "fake", API: llm.APIAnthropic, MaxTokens: 4096, ContextWindow: 100000}

// gated is a scripted provider whose streams wait for the gate (when set)
// or the run's cancellation.
type gated struct {
	*llmtest.Provider
	gate chan struct{}
}

func (g *gated) Stream(ctx context.Context, req *llm.Request, m *llm.Model, c llm.Credential) (*llm.Stream, error) {
	if g.gate != nil {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Provider.Stream(ctx, req, m, c)
}

func answer(text string) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text(text)}, StopReason: llm.StopEnd}
}

type rig struct {
	t    *testing.T
	m    *model
	prov *gated
	msgs chan tea.Msg
}

func newRig(t *testing.T, script ...llm.Message) *rig {
	t.Helper()
	dir := t.TempDir()
	sf, err := session.Create(filepath.Join(dir, "sessions"), dir, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, prov: &gated{Provider: &llmtest.Provider{Messages: script, Chunk: 4}}, msgs: make(chan tea.Msg, 4096)}
	ag := &agent.Agent{Session: sf, Provider: r.prov, Model: testModel}
	r.m = newModel(context.Background(), Options{Agent: ag, Cwd: dir, SessionDir: filepath.Join(dir, "sessions")})
	r.m.send = func(msg tea.Msg) { r.msgs <- msg }
	r.m.ag = ag
	t.Cleanup(ag.Subscribe(func(e *agent.Event) {
		if msg := convert(e, nil); msg != nil {
			r.msgs <- msg
		}
	}))
	t.Cleanup(r.m.stopRun)
	return r
}

func (r *rig) typeText(s string) {
	for _, c := range s {
		r.m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{c}})
	}
}

func (r *rig) key(k tea.KeyMsg) { r.m.Update(k) }

var (
	keyEnter    = tea.KeyMsg{Type: tea.KeyEnter}
	keyAltEnter = tea.KeyMsg{Type: tea.KeyEnter, Alt: true}
	keyEsc      = tea.KeyMsg{Type: tea.KeyEsc}
)

// settle feeds the agent's messages to the model until it is idle with
// nothing queued.
func (r *rig) settle() {
	r.t.Helper()
	deadline := time.After(5 * time.Second)
	for r.m.running || len(r.m.queue) > 0 {
		select {
		case msg := <-r.msgs:
			r.m.Update(msg)
		case <-deadline:
			r.t.Fatalf("still running; queue %v", r.m.queue)
		}
	}
}

// userTexts is the text of each request's last user message.
func (r *rig) userTexts() []string {
	var out []string
	for _, req := range r.prov.Requests {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if m := req.Messages[i]; m.Role == llm.RoleUser {
				out = append(out, m.Content[0].Text)
				break
			}
		}
	}
	return out
}

func TestQueuedSteerIsDeliveredBeforeFollowUp(t *testing.T) {
	r := newRig(t, answer("one"), answer("two"), answer("three"))
	r.prov.gate = make(chan struct{})
	r.typeText("first")
	r.key(keyEnter)
	if !r.m.running {
		t.Fatal("Enter on an idle editor did not start a run")
	}
	r.typeText("later")
	r.key(keyAltEnter)
	r.typeText("now")
	r.key(keyEnter)
	if len(r.m.queue) != 2 || r.m.queue[0].kind != followUp || r.m.queue[1].kind != steer {
		t.Fatalf("queue = %+v", r.m.queue)
	}
	if v := r.m.View(); !strings.Contains(v, "queued follow-up: later") || !strings.Contains(v, "queued steer: now") {
		t.Fatalf("queued messages not shown above the editor:\n%s", v)
	}
	close(r.prov.gate)
	r.settle()
	if got := strings.Join(r.userTexts(), ","); got != "first,now,later" {
		t.Fatalf("delivery order = %s, want first,now,later", got)
	}
}

func TestEscAbortsAndRestoresQueue(t *testing.T) {
	r := newRig(t, answer("never"))
	r.prov.gate = make(chan struct{})
	r.typeText("hang")
	r.key(keyEnter)
	r.typeText("queued one")
	r.key(keyEnter)
	r.typeText("draft")
	r.key(keyEsc)
	r.settle()
	if v := r.m.editor.Value(); v != "queued one\ndraft" {
		t.Fatalf("editor after Esc = %q, want the queued message then the draft", v)
	}
	msgs := r.m.ag.Messages()
	last := msgs[len(msgs)-1].LLM
	if last.StopReason != llm.StopAborted {
		t.Fatalf("last message stop = %s", last.StopReason)
	}
	if len(r.prov.Requests) != 0 {
		t.Fatalf("aborted before the gate, yet %d requests reached the provider", len(r.prov.Requests))
	}
}

func TestEditorNewlines(t *testing.T) {
	r := newRig(t)
	r.typeText(`line one\`)
	r.key(keyEnter)
	if r.m.running || r.m.editor.Value() != "line one\n" {
		t.Fatalf("trailing backslash: running %v, editor %q", r.m.running, r.m.editor.Value())
	}
	r.typeText("two")
	r.key(keyAltEnter)
	r.typeText("three")
	r.key(tea.KeyMsg{Type: tea.KeyCtrlJ})
	r.typeText("four")
	if v := r.m.editor.Value(); v != "line one\ntwo\nthree\nfour" {
		t.Fatalf("editor = %q", v)
	}
	if r.m.editor.Height() != 4 {
		t.Fatalf("editor height %d, want it grown to 4 lines", r.m.editor.Height())
	}
	r.key(keyEsc)
	if r.m.editor.Value() != "" {
		t.Fatal("Esc did not clear the draft")
	}
}

func TestTreeNavigationPrefillsUserMessage(t *testing.T) {
	r := newRig(t, answer("a1"), answer("a2"))
	for _, p := range []string{"first question", "second question"} {
		r.typeText(p)
		r.key(keyEnter)
		r.settle()
	}
	sf := r.m.ag.Session
	var second *session.Entry
	for _, e := range sf.Entries() {
		if text, ok := userMessage(e); ok && text == "second question" {
			second = e
		}
	}
	if second == nil {
		t.Fatal("second user message not in the session")
	}
	r.m.openTree()
	if r.m.picker == nil || len(r.m.picker.items) != 4 {
		t.Fatalf("tree rows = %+v", r.m.picker)
	}
	if it := r.m.picker.items[r.m.picker.cursor]; it.value != sf.Leaf() {
		t.Fatalf("cursor on %q, want the leaf", it.label)
	}
	r.m.picker = nil
	r.m.navigate(second.ID)
	if sf.Leaf() != second.ParentID || r.m.editor.Value() != "second question" {
		t.Fatalf("leaf %s (want %s), editor %q", sf.Leaf(), second.ParentID, r.m.editor.Value())
	}
	if n := len(r.m.ag.Messages()); n != 2 {
		t.Fatalf("context after navigation has %d messages, want 2", n)
	}
	// Resubmitting makes a sibling branch: the tree indents two children.
	r.prov.Messages = []llm.Message{answer("a2 again")}
	r.typeText(" (edited)")
	r.key(keyEnter)
	r.settle()
	r.m.openTree()
	indented := 0
	for _, it := range r.m.picker.items {
		if strings.HasPrefix(it.label, "  user: second question") {
			indented++
		}
	}
	if indented != 2 {
		t.Fatalf("branches not indented under the branch point: %+v", r.m.picker.items)
	}
}

func TestSlashCommandsWithoutBackends(t *testing.T) {
	r := newRig(t)
	r.m.command("/rename ")
	if h := r.m.ag.Session.Header(); h.Title != "" {
		t.Fatalf("empty rename set title %q", h.Title)
	}
	r.m.command("/rename my work")
	if h := r.m.ag.Session.Header(); h.Title != "my work" {
		t.Fatalf("/rename: title %q", h.Title)
	}
	if r.m.command("/exit")() != tea.Quit() {
		t.Fatal("/exit does not quit")
	}
	old := r.m.ag.Session
	r.m.command("/new")
	if r.m.ag.Session == old || r.m.ag.Session.Header().ID == old.Header().ID {
		t.Fatal("/new did not switch to a new session")
	}
}

// TestExportCommand: /export writes the session's page (pkg/agent/export)
// beside the working directory.
func TestExportCommand(t *testing.T) {
	r := newRig(t, answer("<script>alert(1)</script>"))
	r.typeText("show <b>html</b>")
	r.key(keyEnter)
	r.settle()
	if err := r.m.ag.Session.Persist(); err != nil {
		t.Fatal(err)
	}
	r.typeText("/export out/s.html")
	r.key(keyEnter)
	b, err := os.ReadFile(filepath.Join(r.m.opt.Cwd, "out", "s.html"))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, "<script>alert") || !strings.Contains(s, "&lt;script&gt;alert(1)") ||
		!strings.Contains(s, "show &lt;b&gt;html&lt;/b&gt;") {
		t.Fatalf("export not escaped or incomplete:\n%s", s)
	}
}

func TestPreviewAndArgSummary(t *testing.T) {
	lines, hidden := preview("1\n2\n3\n4\n5\n6\n7\n8\n", false)
	if strings.Join(lines, ",") != "1,2,3,7,8" || hidden != 3 {
		t.Fatalf("preview = %v, %d hidden", lines, hidden)
	}
	if lines, hidden = preview("1\n2\n3\n4\n5\n6\n7\n8", true); len(lines) != 8 || hidden != 0 {
		t.Fatalf("expanded preview = %v, %d", lines, hidden)
	}
	for _, c := range []struct{ tool, args, want string }{
		{"bash", `{"command":"ls -la\nrm x"}`, "ls -la …"},
		{"read", `{"path":"a.go","offset":3}`, "a.go"},
		{"grep", `{"pattern":"TODO","path":"pkg"}`, "TODO  in pkg"},
		{"todo", `{"ops":[{},{}]}`, "2 op(s)"},
		{"x", `{"n":1}`, `{"n":1}`},
	} {
		if got := argSummary(c.tool, []byte(c.args)); got != c.want {
			t.Errorf("argSummary(%s, %s) = %q, want %q", c.tool, c.args, got, c.want)
		}
	}
}

func TestUserBashWaitsForTheRun(t *testing.T) {
	r := newRig(t, answer("done"))
	r.m.opt.Bash = func(ctx context.Context, command string, exclude bool) (tools.CommandResult, session.Message, error) {
		code := 0
		raw := fmt.Sprintf(`{"role":"bashExecution","command":%q,"output":"hi\n","exitCode":0,"cancelled":false,"truncated":false,"excludeFromContext":%v,"timestamp":1}`, command, exclude)
		m, err := session.DecodeMessage(json.RawMessage(raw))
		return tools.CommandResult{Output: "hi\n", ExitCode: &code}, m, err
	}
	bashEntries := func() (n int, last bool) {
		entries := r.m.ag.Session.Entries()
		for i, e := range entries {
			if strings.Contains(string(e.Raw), `"role":"bashExecution"`) {
				n++
				last = i == len(entries)-1
			}
		}
		return n, last
	}
	r.prov.gate = make(chan struct{})
	r.typeText("work")
	r.key(keyEnter)
	r.typeText("!!echo hi")
	r.key(keyEnter)
	if r.m.bash != "echo hi" {
		t.Fatalf("running command = %q", r.m.bash)
	}
	deadline := time.After(5 * time.Second)
	for r.m.bash != "" {
		select {
		case msg := <-r.msgs:
			r.m.Update(msg)
		case <-deadline:
			t.Fatal("the command never finished")
		}
	}
	if n, _ := bashEntries(); n != 0 {
		t.Fatal("the bashExecution message was appended while a run was active; it must wait for the run to end")
	}
	close(r.prov.gate)
	r.settle()
	if n, last := bashEntries(); n != 1 || !last {
		t.Fatalf("bashExecution entries %d, last %v: want one, after the run", n, last)
	}
	// Idle: the next command is appended at once.
	r.typeText("!echo again")
	r.key(keyEnter)
	for r.m.bash != "" {
		r.m.Update(<-r.msgs)
	}
	if n, _ := bashEntries(); n != 2 {
		t.Fatalf("idle command not appended: %d entries", n)
	}
}

func TestDisplayRestoresSecretPlaceholders(t *testing.T) {
	restore := func(s string) string { return strings.ReplaceAll(s, "#ABCD#", "s3cret") }
	m := &llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopToolUse, Content: []llm.Content{
		llm.Text("the key is #ABCD#"), llm.ToolCall("t1", "bash", json.RawMessage(`{"command":"echo #ABCD#"}`))}}
	got, ok := convert(&agent.Event{Type: agent.EventMessageEnd, Message: session.EncodeMessage(m, nil)}, restore).(assistantMsg)
	if !ok || got.blocks[0].text != "the key is s3cret" || got.blocks[1].text != "echo s3cret" {
		t.Fatalf("display = %+v", got)
	}
	start, _ := convert(&agent.Event{Type: agent.EventToolExecutionStart, ToolName: "bash",
		Args: json.RawMessage(`{"command":"echo #ABCD#"}`)}, restore).(toolStartMsg)
	if start.summary != "echo s3cret" {
		t.Fatalf("tool summary = %q", start.summary)
	}
}

// TestTreeOffersABranchSummary: with branchSummary.enabled a tree move asks
// No summary / Summarize / Summarize with custom prompt; the
// custom prompt is the next text submitted, and the summary lands in the
// session as a branch_summary entry.
func TestTreeOffersABranchSummary(t *testing.T) {
	r := newRig(t, answer("a1"), answer("a2"), answer("what the abandoned branch did"))
	r.m.ag.Compaction = compaction.Defaults()
	r.m.ag.Compaction.BranchSummaryEnabled = true
	for _, p := range []string{"first question", "second question"} {
		r.typeText(p)
		r.key(keyEnter)
		r.settle()
	}
	sf := r.m.ag.Session
	var first *session.Entry
	for _, e := range sf.Entries() {
		if text, ok := userMessage(e); ok && text == "first question" {
			first = e
		}
	}
	r.m.navigate(first.ID)
	if r.m.picker == nil || len(r.m.picker.items) != 3 || r.m.picker.items[2].label != "Summarize with custom prompt" {
		t.Fatalf("summary choice = %+v", r.m.picker)
	}
	p := r.m.picker
	r.m.picker = nil
	p.onPick(p.items[2])
	if sf.Leaf() == first.ParentID {
		t.Fatal("moved before the instructions were given")
	}
	r.typeText("focus on the tests")
	r.key(keyEnter)
	r.settle()
	var summary *session.Entry
	for _, e := range sf.Entries() {
		if e.Type == session.TypeBranchSummary {
			summary = e
		}
	}
	if summary == nil || !strings.Contains(string(summary.Raw), "what the abandoned branch did") {
		t.Fatalf("no branch summary in the session: %v", summary)
	}
	last := r.prov.Requests[len(r.prov.Requests)-1]
	if body := fmt.Sprint(last.Messages); !strings.Contains(body, "focus on the tests") {
		t.Fatalf("custom instructions not in the summary request: %s", body)
	}
	if r.m.editor.Value() != "first question" {
		t.Fatalf("editor %q, want the chosen message prefilled", r.m.editor.Value())
	}
}

// TestBannerTellsSessionsStartedTogetherApart: two sessions started in
// the same second share the first 8 characters of their ids; the banner
// shows each with a prefix the other does not have.
func TestBannerTellsSessionsStartedTogetherApart(t *testing.T) {
	r := newRig(t)
	first := r.m.ag.Session
	if err := first.Persist(); err != nil {
		t.Fatal(err)
	}
	r.m.command("/new")
	second := r.m.ag.Session
	if second == first {
		t.Fatal("/new did not switch")
	}
	if err := second.Persist(); err != nil {
		t.Fatal(err)
	}
	shownSecond := r.m.banner()
	r.m.ag.SetSession(first)
	shownFirst := r.m.banner()
	idOf := func(banner string) string { return banner[strings.LastIndex(banner, " ")+1:] }
	a, b := idOf(shownFirst), idOf(shownSecond)
	if a == b {
		t.Fatalf("both sessions show %q", a)
	}
	if !strings.HasPrefix(first.Header().ID, a) || strings.HasPrefix(second.Header().ID, a) {
		t.Errorf("first shows %q: ids %s, %s", a, first.Header().ID, second.Header().ID)
	}
	if !strings.HasPrefix(second.Header().ID, b) || strings.HasPrefix(first.Header().ID, b) {
		t.Errorf("second shows %q: ids %s, %s", b, first.Header().ID, second.Header().ID)
	}
}
