package prompt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/agent/tools"
)

// tree writes files (path → content) under root.
func tree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// world is a home with an agent dir and a repository with a sub directory
// as the cwd.
type world struct{ home, agentDir, repo, cwd string }

func newWorld(t *testing.T) world {
	home := t.TempDir()
	w := world{home: home, agentDir: filepath.Join(home, ".omp", "agent"), repo: filepath.Join(home, "src", "proj")}
	w.cwd = filepath.Join(w.repo, "pkg", "sub")
	if err := os.MkdirAll(w.cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(w.repo, ".git"), 0o755)
	os.MkdirAll(w.agentDir, 0o700)
	return w
}

func (w world) build(t *testing.T, mod func(*Options)) *Result {
	t.Helper()
	set := tools.Builtin(&tools.Env{Cwd: w.cwd}, tools.BashOptions{}, &tools.TodoList{}, func(string) bool { return true })
	o := Options{Cwd: w.cwd, AgentDir: w.agentDir, Home: w.home, Tools: set.Specs(),
		Getenv: func(k string) string { return map[string]string{"SHELL": "/bin/zsh", "TERM_PROGRAM": "WezTerm"}[k] },
		Now:    time.Date(2026, 11, 25, 23, 0, 0, 0, time.UTC)}
	if mod != nil {
		mod(&o)
	}
	r, err := Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDefaultPromptSections(t *testing.T) {
	w := newWorld(t)
	r := w.build(t, nil)
	p := r.Text
	for _, want := range []string{
		"You are omp, a coding agent",
		"- `edit`: replace exact text",
		"- `bash`: run a shell command",
		"<workstation>\n- OS: ",
		"- Shell: zsh",
		"- Terminal: WezTerm",
		"Today is 2026-11-25, and the current working directory is '" + w.cwd + "'.\n\n<critical>\n- Each response **MUST** advance the task. There is no stopping condition other than completion.",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	for _, absent := range []string{"<redacted-content>", "<rules>", "<repo-rules>", "{{"} {
		if strings.Contains(p, absent) {
			t.Errorf("prompt has %q", absent)
		}
	}
	if !strings.HasSuffix(p, "</critical>") {
		t.Errorf("the now section is not last:\n%s", p[len(p)-200:])
	}
	if s := w.build(t, func(o *Options) { o.Secrets = true }).Text; !strings.Contains(s, "<redacted-content>\nSome values in tool output are redacted for security. They appear as `#XXXX#` tokens") {
		t.Error("secrets notice missing")
	}
}

func TestSystemAndAppendOverrides(t *testing.T) {
	w := newWorld(t)
	tree(t, w.agentDir, map[string]string{"SYSTEM.md": "AGENT-DIR SYSTEM", "APPEND_SYSTEM.md": "AGENT-DIR APPEND"})
	r := w.build(t, nil)
	if strings.Contains(r.Text, "You are omp") || !strings.HasPrefix(r.Text, "AGENT-DIR SYSTEM") {
		t.Fatalf("agent-dir SYSTEM.md not used:\n%s", r.Text)
	}
	// A non-empty project .omp/ wins over the agent dir; its content is
	// literal (no template expansion); sections 2–6 stay.
	tree(t, w.repo, map[string]string{".omp/SYSTEM.md": "PROJECT {{.Cwd}} SYSTEM\n", ".omp/APPEND_SYSTEM.md": "PROJECT APPEND"})
	r = w.build(t, nil)
	if !strings.HasPrefix(r.Text, "PROJECT {{.Cwd}} SYSTEM\n\n<workstation>") || !strings.Contains(r.Text, "PROJECT APPEND\n\nToday is") {
		t.Fatalf("project overrides:\n%s", r.Text)
	}
	// The CLI beats files: text, or a file path.
	f := filepath.Join(t.TempDir(), "sys.txt")
	os.WriteFile(f, []byte("FROM FILE\n"), 0o600)
	r = w.build(t, func(o *Options) { o.SystemPrompt, o.AppendPrompt = f, "CLI APPEND" })
	if !strings.HasPrefix(r.Text, "FROM FILE\n") || !strings.Contains(r.Text, "CLI APPEND\n\nToday is") || strings.Contains(r.Text, "PROJECT") {
		t.Fatalf("CLI overrides:\n%s", r.Text)
	}
	// An empty .omp/ is not a project directory.
	os.RemoveAll(filepath.Join(w.repo, ".omp"))
	os.MkdirAll(filepath.Join(w.cwd, ".omp"), 0o755)
	if d := ProjectDir(w.cwd, w.home); d != "" {
		t.Fatalf("empty .omp chosen: %s", d)
	}
}

func TestContextFileDiscovery(t *testing.T) {
	w := newWorld(t)
	big := strings.Repeat("é", 40<<10) // 80 KiB
	tree(t, w.home, map[string]string{
		"AGENTS.md":            "above the repo: never read",
		"src/AGENTS.md":        "above the repo too",
		".omp/agent/AGENTS.md": "USER",
	})
	tree(t, w.repo, map[string]string{
		".omp/AGENTS.md":        "PROJECT-OMP",
		"AGENTS.md":             "ROOT-AGENTS",
		"CLAUDE.md":             "ROOT-CLAUDE",
		"pkg/AGENTS.md":         big,
		"pkg/sub/CLAUDE.md":     "LEAF-CLAUDE",
		"pkg/sub/deeper/AGENTS": "below the cwd: not read",
	})
	os.WriteFile(filepath.Join(w.cwd, "AGENTS.md"), nil, 0o644) // empty: skipped
	// A symlink to an already included file is not included twice.
	os.Symlink(filepath.Join(w.repo, "AGENTS.md"), filepath.Join(w.repo, "pkg", "CLAUDE.md"))

	files, warns := ContextFiles(w.cwd, w.agentDir, w.home)
	var got []string
	for _, f := range files {
		got = append(got, f.Path)
	}
	want := []string{"~/.omp/agent/AGENTS.md", "~/src/proj/.omp/AGENTS.md", "~/src/proj/AGENTS.md", "~/src/proj/CLAUDE.md",
		"~/src/proj/pkg/AGENTS.md", "CLAUDE.md"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	if c := files[4].Content; !strings.HasSuffix(c, "\n[truncated]") || len(c) > 64<<10+20 || !strings.HasPrefix(c, "éé") {
		t.Fatalf("big file not cut at 64 KiB: %d bytes", len(c))
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "pkg/AGENTS.md is larger than 64 KiB") {
		t.Fatalf("warnings %v", warns)
	}
	p := w.build(t, nil).Text
	if !strings.Contains(p, "<repo-rules>\nFollow these context files for all tasks:\n<file path=\"~/.omp/agent/AGENTS.md\">\nUSER\n</file>") {
		t.Fatalf("repo-rules block:\n%s", p)
	}

	// Outside a repository: the cwd alone.
	plain := t.TempDir()
	tree(t, plain, map[string]string{"AGENTS.md": "HERE"})
	files, _ = ContextFiles(plain, "", "")
	if len(files) != 1 || files[0].Path != "AGENTS.md" {
		t.Fatalf("outside a repo: %+v", files)
	}
}

func TestRules(t *testing.T) {
	w := newWorld(t)
	tree(t, w.cwd, map[string]string{
		".omp/rules/b-always.md":  "---\nalwaysApply: true\n---\nAlways do B.\n",
		".omp/rules/a-book.mdc":   "---\ndescription: Go style\nglobs: [\"**/*.go\", \"go.mod\"]\n---\nUse gofmt.\n",
		".omp/rules/c-none.md":    "No front matter: dropped.",
		".omp/rules/d-ttsr.md":    "---\nttsr_trigger: foo\ndescription: x\n---\nlater",
		".omp/rules/e-broken.md":  "---\ndescription: broken: yaml: here\nglobs: *.ts\n---\nTS rule.",
		".omp/rules/skip.txt":     "---\nalwaysApply: true\n---\nnot a rule file",
		".cursor/rules/a-book.md": "---\nalwaysApply: true\n---\nshadowed by the native rule",
		".cursor/rules/f-cur.mdc": "---\nalwaysApply: \"true\"\ndescription: Cursor described\n---\nCursor body.",
	})
	tree(t, w.agentDir, map[string]string{"rules/g-user.md": "---\nalwaysApply: true\n---\nUser-level always."})
	r := w.build(t, nil)
	var always, book []string
	for _, x := range r.Rules.Always {
		always = append(always, x.Name)
	}
	for _, x := range r.Rules.Book {
		book = append(book, x.Name)
	}
	if fmt.Sprint(always) != "[b-always g-user]" || fmt.Sprint(book) != "[a-book e-broken f-cur]" {
		t.Fatalf("always %v book %v", always, book)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "e-broken.md: front matter is not valid YAML") {
		t.Fatalf("warnings %v", r.Warnings)
	}
	for _, want := range []string{
		"<rule name=\"b-always\">\nAlways do B.\n</rule>",
		"Rules are local constraints. You **MUST** read `rule://<name>` when working in that domain.\n<rules>\n" +
			"<rule name=\"a-book\">Go style<glob>**/*.go</glob><glob>go.mod</glob></rule>\n" +
			"<rule name=\"e-broken\">broken: yaml: here<glob>*.ts</glob></rule>\n" +
			"<rule name=\"f-cur\">Cursor described</rule>\n</rules>",
	} {
		if !strings.Contains(r.Text, want) {
			t.Errorf("prompt lacks %q:\n%s", want, r.Text)
		}
	}
	if c, ok := r.Rules.Lookup("a-book"); !ok || c != "Use gofmt." {
		t.Fatalf("rule://a-book = %q %v", c, ok)
	}
	if n := w.build(t, func(o *Options) { o.NoRules = true }); strings.Contains(n.Text, "<rules") || len(n.Rules.Book) != 0 {
		t.Fatal("--no-rules still loads rules")
	}
}

func TestLayout(t *testing.T) {
	root := t.TempDir()
	tree(t, root, map[string]string{
		".gitignore":          "build/\n*.log\n",
		"build/out.bin":       "x",
		"debug.log":           "x",
		"old.txt":             "x",
		"new.txt":             "x",
		"a/b/c/d/too-deep.go": "x",
		"a/b/c/ok.go":         "x",
		".git/HEAD":           "x",
	})
	past := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(root, "old.txt"), past, past)
	got := tools.Layout(context.Background(), root, 3, 200)
	for _, bad := range []string{"build", "debug.log", "too-deep", ".git/", "HEAD"} {
		if strings.Contains(got, bad) {
			t.Errorf("layout shows %q:\n%s", bad, got)
		}
	}
	if !strings.Contains(got, "a/\n  b/\n    c/\n") || strings.Contains(got, "ok.go") {
		t.Errorf("depth: %s", got)
	}
	if strings.Index(got, "new.txt") > strings.Index(got, "old.txt") {
		t.Errorf("not newest first:\n%s", got)
	}
	for i := range 300 {
		tree(t, root, map[string]string{fmt.Sprintf("many/f%03d", i): "x"})
	}
	cut := tools.Layout(context.Background(), root, 3, 200)
	if n := strings.Count(cut, "\n"); n != 200 || !strings.HasSuffix(cut, "…") {
		t.Fatalf("cap: %d lines, tail %q", n, cut[len(cut)-20:])
	}
}
