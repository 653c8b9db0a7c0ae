// Package prompt builds the coding agent's system prompt: our own base
// prompt with one line of guidance per active tool, the always-apply rules
// and the rulebook (LoadRules), the secrets notice, the project section
// (workstation facts, the context files ContextFiles finds, the
// working-directory layout, the append prompt) and the "now" section.
// SYSTEM.md / --system-prompt replace the base prompt only, inserted
// literally; APPEND_SYSTEM.md / --append-system-prompt come last in the
// project section. The templates are embedded text/template files under
// templates/.
package prompt

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/ompgo/omp/pkg/agent/tools"
	"github.com/ompgo/omp/pkg/llm"
)

//go:embed templates/*.md
var templateFS embed.FS

// templates are parsed on first use: a package initialiser runs on every
// omp start, also for commands that build no prompt.
var templates = sync.OnceValue(func() *template.Template {
	return template.Must(template.ParseFS(templateFS, "templates/*.md"))
})

// The working-directory layout goes at most layoutDepth levels deep and
// lists at most layoutEntries entries.
const (
	layoutDepth   = 3
	layoutEntries = 200
)

// Options are the inputs of one system prompt.
type Options struct {
	// Cwd is the session's working directory.
	Cwd string
	// AgentDir is ~/.omp/agent (SYSTEM.md, APPEND_SYSTEM.md, AGENTS.md,
	// rules/).
	AgentDir string
	// Home is the user's home directory (rule and context discovery stop
	// there; display paths use ~).
	Home string
	// Tools are the active tools' definitions, in order.
	Tools []llm.Tool
	// SystemPrompt and AppendPrompt are the CLI's --system-prompt and
	// --append-system-prompt values: text, or the path of a file to read.
	SystemPrompt, AppendPrompt string
	// NoRules disables rules entirely (--no-rules).
	NoRules bool
	// Secrets adds the redacted-content notice (secrets.enabled).
	Secrets bool
	// Getenv reads the environment for the workstation facts (nil: none).
	Getenv func(string) string
	// Now is the clock for the date line (zero: time.Now()).
	Now time.Time
}

// Result is a built prompt and what went into it.
type Result struct {
	// Text is the system prompt.
	Text string
	// Rules are the loaded rules (the rulebook serves rule://<name> reads).
	Rules *Rules
	// ContextFiles are the context files included, in order.
	ContextFiles []ContextFile
	// Warnings name inputs that were skipped or cut (unparsable rule front
	// matter, truncated context files).
	Warnings []string
}

// Null reports whether the environment asks for no system prompt at all
// (NULL_PROMPT=true).
func Null(getenv func(string) string) bool { return getenv != nil && getenv("NULL_PROMPT") == "true" }

// Build assembles the system prompt. It fails only when a prompt file that
// exists cannot be read (a named CLI file, SYSTEM.md…).
func Build(ctx context.Context, o Options) (*Result, error) {
	res := &Result{}
	base, err := systemOverride(o)
	if err != nil {
		return nil, err
	}
	if base == "" {
		var b strings.Builder
		if err := templates().ExecuteTemplate(&b, "base.md", struct{ Tools []toolLine }{toolLines(o.Tools)}); err != nil {
			return nil, err
		}
		base = strings.TrimRight(b.String(), "\n")
	}
	appendText, err := appendOverride(o)
	if err != nil {
		return nil, err
	}

	rules := &Rules{}
	if !o.NoRules {
		rules = LoadRules(o.Cwd, o.AgentDir, o.Home)
		res.Warnings = append(res.Warnings, rules.Warnings...)
	}
	res.Rules = rules
	files, warns := ContextFiles(o.Cwd, o.AgentDir, o.Home)
	res.ContextFiles = files
	res.Warnings = append(res.Warnings, warns...)

	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	data := struct {
		Base         string
		AlwaysRules  []Rule
		Rulebook     []Rule
		Secrets      bool
		Workstation  []Fact
		ContextFiles []ContextFile
		Layout       string
		Append       string
		Date, Cwd    string
	}{
		Base:         base,
		AlwaysRules:  rules.Always,
		Rulebook:     rules.Book,
		Secrets:      o.Secrets,
		Workstation:  Workstation(o.Getenv),
		ContextFiles: files,
		Layout:       tools.Layout(ctx, o.Cwd, layoutDepth, layoutEntries),
		Append:       appendText,
		Date:         now.Format("2006-01-02"),
		Cwd:          o.Cwd,
	}
	var b strings.Builder
	if err := templates().ExecuteTemplate(&b, "system.md", data); err != nil {
		return nil, err
	}
	res.Text = strings.TrimRight(b.String(), "\n")
	return res, nil
}

// toolLine is one line of tool guidance in the base prompt.
type toolLine struct{ Name, Guide string }

// guides are our one-line usage notes for the built-in tools; other tools
// use the first sentence of their description.
var guides = map[string]string{
	"read":  "read a file (or a directory listing, an image, `artifact://<id>`, `rule://<name>`); page large files with offset/limit.",
	"write": "create a file or replace one completely; parent directories are created.",
	"edit":  "replace exact text in a file; the old text must match once, so include enough context.",
	"bash":  "run a shell command in the working directory; long output is truncated and kept as an artifact.",
	"grep":  "search file contents with a regular expression (honours .gitignore).",
	"find":  "find files by glob pattern (honours .gitignore).",
	"glob":  "list files matching a glob pattern.",
	"todo":  "keep a phased task list for multi-step work; update it as you progress.",
}

func toolLines(ts []llm.Tool) []toolLine {
	out := make([]toolLine, 0, len(ts))
	for _, t := range ts {
		g := guides[t.Name]
		if g == "" {
			g = firstSentence(t.Description)
		}
		out = append(out, toolLine{t.Name, g})
	}
	return out
}

func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// systemOverride is the replacement of the base prompt: --system-prompt
// (text or a file) beats SYSTEM.md of the nearest non-empty project .omp/,
// then of the agent directory. "" means our base prompt.
func systemOverride(o Options) (string, error) {
	if o.SystemPrompt != "" {
		return textOrFile(o.SystemPrompt)
	}
	return promptFile(o, "SYSTEM.md")
}

// appendOverride is the append prompt: --append-system-prompt beats
// APPEND_SYSTEM.md (same lookup as SYSTEM.md).
func appendOverride(o Options) (string, error) {
	if o.AppendPrompt != "" {
		return textOrFile(o.AppendPrompt)
	}
	return promptFile(o, "APPEND_SYSTEM.md")
}

// textOrFile reads v when it names a regular file, else returns it.
func textOrFile(v string) (string, error) {
	if st, err := os.Stat(v); err == nil && st.Mode().IsRegular() {
		b, err := os.ReadFile(v)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", v, err)
		}
		return strings.TrimRight(string(b), "\n"), nil
	}
	return v, nil
}

// promptFile reads name from the nearest non-empty project .omp/
// directory, else from the agent directory; "" when neither has it.
func promptFile(o Options, name string) (string, error) {
	var dirs []string
	if d := ProjectDir(o.Cwd, o.Home); d != "" {
		dirs = append(dirs, d)
	}
	if o.AgentDir != "" {
		dirs = append(dirs, o.AgentDir)
	}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("read %s: %w", filepath.Join(d, name), err)
		}
		return strings.TrimRight(string(b), "\n"), nil
	}
	return "", nil
}

// ProjectDir returns the nearest ancestor .omp/ directory of cwd (cwd
// included) that is non-empty, not going above home unless cwd is
// outside it; "" when there is none. The agent's own ~/.omp is not a
// project directory.
func ProjectDir(cwd, home string) string {
	for dir := cwd; ; {
		p := filepath.Join(dir, ".omp")
		if dir != home {
			if ents, err := os.ReadDir(p); err == nil && len(ents) > 0 {
				return p
			}
		}
		if dir == home {
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
