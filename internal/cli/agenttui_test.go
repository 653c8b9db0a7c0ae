package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// tmuxPane drives the real omp binary in a detached tmux session on a
// private socket: keys in with send-keys, the screen out with
// capture-pane.
type tmuxPane struct {
	t    *testing.T
	sock string
}

func newTmux(t *testing.T, dir string, env []string, args ...string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: the interactive-mode test needs it (make test installs it)")
	}
	p := &tmuxPane{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	// env -i: the pane sees only the test's environment, not the tmux
	// server's.
	argv := append([]string{"env", "-i"}, env...)
	argv = append(argv, args...)
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	// The pane's shell outlives omp, so the terminal state after exit can
	// be inspected (a dead pane reports no cursor state).
	p.tmux("-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "40", "-s", "omp", "-c", dir,
		strings.Join(quoted, " ")+"; echo omp-exited-$?; sleep 120")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("screen at failure:\n%s", p.screen())
		}
		_ = exec.Command("tmux", "-S", p.sock, "kill-server").Run()
	})
	return p
}

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.sock}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// screen is the visible pane plus its scrollback.
func (p *tmuxPane) screen() string {
	out, _ := exec.Command("tmux", "-S", p.sock, "capture-pane", "-p", "-J", "-S", "-500", "-t", "omp").Output()
	return string(out)
}

// typeText types text literally; keys sends named keys (Enter, Escape, M-Enter, C-d).
func (p *tmuxPane) typeText(text string) { p.tmux("send-keys", "-t", "omp", "-l", text) }
func (p *tmuxPane) keys(keys ...string) {
	p.tmux(append([]string{"send-keys", "-t", "omp"}, keys...)...)
}

// escape sends Esc alone: a key that follows within the same read would
// make it Alt+<key>, as on a real terminal.
func (p *tmuxPane) escape() {
	p.keys("Escape")
	time.Sleep(250 * time.Millisecond)
}

// waitFor waits until every want is on the screen; the deadline allows for
// a loaded machine (a race-built binary on two busy cores).
func (p *tmuxPane) waitFor(what string, want ...string) string {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := p.screen()
		ok := true
		for _, w := range want {
			if !strings.Contains(s, w) {
				ok = false
				break
			}
		}
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: %q not on the screen", what, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestInteractiveModeInTmux runs `omp` in a real terminal (tmux) against
// the fake upstream: a prompt streams its answer with a tool call shown
// while it runs, a steer (Enter) and a follow-up (Alt+Enter) typed during
// the run are queued and delivered, Esc aborts a hanging stream, slash
// commands answer, and the model picker switches the model the next
// request uses, the tree opens, /compact compacts.
func TestInteractiveModeInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and drives it in tmux")
	}
	e := newE2E(t)
	yml := fmt.Sprintf(`providers:
  fake:
    baseUrl: %s
    apiKey: FAKE_PROVIDER_KEY
    api: anthropic-messages
    auth: apiKey
    models:
      - id: fake-model
        contextWindow: 200000
        maxTokens: 8192
      - id: fake-other
        name: Fake Other
        contextWindow: 100000
        maxTokens: 4096
`, e.fake.srv.URL)
	if err := os.WriteFile(filepath.Join(e.home, ".omp", "agent", "models.yml"), []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	// A tiny keepRecentTokens so /compact has something to summarise.
	if err := os.WriteFile(filepath.Join(e.home, ".omp", "agent", "config.yml"), []byte("compaction:\n  keepRecentTokens: 10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	editor := filepath.Join(e.home, "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nprintf '\\nfrom the editor\\n' >> \"$1\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"EDITOR=" + editor, "HOME=" + e.home, "PATH=" + os.Getenv("PATH"), "TERM=xterm-256color", "LANG=C.UTF-8",
		"FAKE_PROVIDER_KEY=sk-fake-123", "PI_BASH_NO_LOGIN=1"}
	p := newTmux(t, e.project, env, binary(t), "--model", "fake/fake-model")
	p.waitFor("startup", "fake/fake-model", "/help")

	// 1. A prompt: the tool call is on screen while it runs. A follow-up
	// (Alt+Enter) typed meanwhile waits above the editor; a steer (Enter)
	// interrupts the running tool and is answered first, then the
	// follow-up is delivered.
	e.fake.push(
		asst(llm.StopToolUse, llm.Text("Let me look."), call("toolu_1", "bash", map[string]string{"command": "echo started; sleep 8"})),
		asst(llm.StopEnd, llm.Text("Steered answer.")),
		asst(llm.StopEnd, llm.Text("Follow-up answer.")),
	)
	p.typeText("what is the answer?")
	p.keys("Enter")
	p.waitFor("tool running", "● bash echo started; sleep 8", "Let me look.")
	p.typeText("and then this")
	p.keys("M-Enter")
	p.waitFor("queued follow-up", "queued follow-up: and then this")
	start := time.Now()
	p.typeText("steer this way")
	p.keys("Enter")
	p.waitFor("answers", "✗ bash echo started; sleep 8", "› steer this way", "Steered answer.", "› and then this",
		"Follow-up answer.")
	if d := time.Since(start); d > 6*time.Second {
		t.Fatalf("the steer waited %v for the tool instead of interrupting it", d)
	}
	s := p.screen()
	if i, j := strings.Index(s, "Steered answer."), strings.Index(s, "Follow-up answer."); i > j {
		t.Fatalf("follow-up delivered before the steer:\n%s", s)
	}
	reqs := e.fake.requests()
	if len(reqs) != 3 {
		t.Fatalf("upstream requests = %d, want 3", len(reqs))
	}
	lastB, _ := json.Marshal(reqs[2]["messages"])
	last := string(lastB)
	if !strings.Contains(last, "steer this way") || !strings.Contains(last, "and then this") {
		t.Fatalf("the follow-up request lacks the queued messages: %s", last)
	}

	// 2. Esc aborts a hanging stream; the editor is usable again.
	hang := fakeHang{started: make(chan struct{})}
	e.fake.push(hang)
	p.typeText("this will hang")
	p.keys("Enter")
	select {
	case <-hang.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the hanging request never reached the fake upstream")
	}
	p.waitFor("working", "esc abort")
	p.escape()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Contains(lastLines(p.screen(), 2), "esc abort") {
		if time.Now().After(deadline) {
			t.Fatal("still running 10 s after Esc")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// 3. Slash commands.
	p.typeText("/help")
	p.keys("Enter")
	p.waitFor("/help", "/compact [focus]", "/tree", "/exit")
	p.typeText("/rename tmux demo")
	p.keys("Enter")
	p.waitFor("/rename", "Session renamed to tmux demo")
	p.typeText("/nope")
	p.keys("Enter")
	p.waitFor("unknown command", "Unknown command: /nope")
	// Shift+Enter (CSI 13;2u and the modifyOtherKeys form) inserts a
	// newline; Esc clears the draft.
	p.typeText("first line")
	p.typeText("\x1b[13;2u")
	p.typeText("second line")
	p.typeText("\x1b[27;2;13~")
	p.typeText("third line")
	p.waitFor("shift+enter", "│ first line", "│ second line", "│ third line")
	// Ctrl+G hands the draft to $EDITOR and takes its text back.
	p.keys("C-g")
	p.waitFor("ctrl+g", "│ third line", "│ from the editor")
	p.escape()
	p.typeText("!echo tui-bash-$((6*7))")
	p.keys("Enter")
	p.waitFor("user bash", "$ echo tui-bash-$((6*7))", "tui-bash-42")

	// 4. The model picker: /model lists the models, typing filters, Enter
	// switches; the next request uses the new model.
	p.typeText("/model")
	p.keys("Enter")
	p.waitFor("picker", "Select a model", "fake/fake-other", "Fake Other")
	p.typeText("other")
	p.keys("Enter")
	p.waitFor("model switched", "Model: fake/fake-other")
	p.keys("M-m")
	p.waitFor("alt+m opens the picker", "Select a model", "• fake/fake-other")
	p.escape()
	e.fake.push(asst(llm.StopEnd, llm.Text("Other model here.")))
	p.typeText("who are you?")
	p.keys("Enter")
	p.waitFor("answer from the new model", "Other model here.")
	reqs = e.fake.requests()
	if got := reqs[len(reqs)-1]["model"]; got != "fake-other" {
		t.Fatalf("model of the last request = %v, want fake-other", got)
	}

	// 5. The session tree opens on double Esc and lists the prompts.
	p.keys("Escape")
	time.Sleep(150 * time.Millisecond)
	p.keys("Escape")
	p.waitFor("tree", "Session tree", "user: what is the answer?", "← current")
	if os.Getenv("TUI_DEBUG") != "" {
		t.Logf("screen:\n%s", p.screen())
	}
	p.escape()

	// 6. /compact summarises with the current model and shows the divider.
	e.fake.push(asst(llm.StopEnd, llm.Text("## Goal\nSummary of the work so far.")))
	p.typeText("/compact keep it short")
	p.keys("Enter")
	p.waitFor("/compact", "── 📷 compacted · ctrl+o ──")
	reqs = e.fake.requests()
	if b, _ := json.Marshal(reqs[len(reqs)-1]); !strings.Contains(string(b), "keep it short") {
		t.Fatalf("the summary request lacks the /compact instructions: %s", b)
	}

	// 7. Ctrl+D on the empty editor quits; the session is on disk with the
	// aborted turn and the rename.
	p.keys("C-d")
	p.waitFor("exit on ctrl+d", "omp-exited-0")
	// On exit the terminal is restored (no alternate screen, cursor visible,
	// application-cursor and mouse modes off).
	if got := p.tmux("display-message", "-p", "-t", "omp", "#{alternate_on}#{cursor_flag}#{keypad_cursor_flag}#{mouse_any_flag}"); strings.TrimSpace(got) != "0100" {
		t.Fatalf("terminal after exit: alternate_on,cursor_flag,keypad_cursor_flag,mouse_any_flag = %s, want 0100", got)
	}
	files := e.sessionFiles(t)
	if len(files) != 1 {
		t.Fatalf("session files = %v", files)
	}
	sf, err := session.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	renamed := sf.Header().Title == "tmux demo"
	var aborted, compacted, bashed bool
	for _, en := range sf.Entries() {
		bashed = bashed || strings.Contains(string(en.Raw), `"role":"bashExecution"`) && strings.Contains(string(en.Raw), "tui-bash-42")
		compacted = compacted || en.Type == session.TypeCompaction && strings.Contains(string(en.Raw), "Summary of the work so far.")
		aborted = aborted || strings.Contains(string(en.Raw), `"stopReason":"aborted"`)
	}
	if !aborted || !renamed || !compacted || !bashed {
		t.Fatalf("session file: aborted turn %v, rename %v, compaction %v, user bash %v", aborted, renamed, compacted, bashed)
	}
	if c := sf.BuildContext(); c.Model != "fake/fake-other" {
		t.Fatalf("session model = %q", c.Model)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestInteractiveModeAlone: the omp binary copied alone into an empty
// directory, with nothing in PATH, shows the interactive mode on a
// terminal and quits on /exit: it needs no other program.
func TestInteractiveModeAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and drives it in tmux")
	}
	built := binary(t)
	alone := filepath.Join(t.TempDir(), "omp")
	data, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	e := newE2E(t)
	env := []string{"HOME=" + e.home, "PATH=" + t.TempDir(), "TERM=xterm-256color", "LANG=C.UTF-8", "FAKE_PROVIDER_KEY=sk-fake-123"}

	p := newTmux(t, e.project, env, alone, "--model", "fake/fake-model")
	p.waitFor("startup", "fake/fake-model", "/help")
	p.typeText("/exit")
	p.keys("Enter")
	p.waitFor("exit", "omp-exited-0")
}

// TestInteractiveResumeInTmux: `omp -c` on a terminal shows the session's
// conversation — the prompt, the assistant's text, the tool call with its
// output, the answer — in order, then the resumed notice.
func TestInteractiveResumeInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and drives it in tmux")
	}
	e := newE2E(t)
	e.fake.push(
		asst(llm.StopToolUse, llm.Text("Let me look."), call("toolu_1", "bash", map[string]string{"command": "echo tool-output-xyz"})),
		asst(llm.StopEnd, llm.Text("All listed.")),
	)
	if stdout, stderr, code := e.run(t, "", "-p", "--model", "fake/fake-model", "list the files please"); code != 0 || stdout != "All listed.\n" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	env := []string{"HOME=" + e.home, "PATH=" + os.Getenv("PATH"), "TERM=xterm-256color", "LANG=C.UTF-8",
		"FAKE_PROVIDER_KEY=sk-fake-123", "PI_BASH_NO_LOGIN=1"}
	p := newTmux(t, e.project, env, binary(t), "-c")
	want := []string{"› list the files please", "Let me look.", "✓ bash echo tool-output-xyz", "  tool-output-xyz",
		"All listed.", "resumed: 4 messages in context", "/help"}
	s := p.waitFor("resumed transcript", want...)
	at := 0
	for _, w := range want {
		i := strings.Index(s[at:], w)
		if i < 0 {
			t.Fatalf("%q out of order on the screen:\n%s", w, s)
		}
		at += i + len(w)
	}
	p.typeText("/exit")
	p.keys("Enter")
	p.waitFor("exit", "omp-exited-0")
}
