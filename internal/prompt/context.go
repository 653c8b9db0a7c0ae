package prompt

import (
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxContextFile caps each context file; a cut is marked.
const maxContextFile = 64 << 10

// ContextFile is one AGENTS.md / CLAUDE.md put in the prompt.
type ContextFile struct {
	// Path is the display path: ~/… or relative to the cwd.
	Path string
	// Abs is the file's absolute path.
	Abs string
	// Content is the file's text, cut at 64 KiB with "[truncated]".
	Content string
}

// ContextFiles finds the context files of a session, in this order: the
// user's <agentDir>/AGENTS.md, AGENTS.md of the nearest non-empty project
// .omp/, then AGENTS.md and CLAUDE.md of each directory from the
// repository root (the nearest ancestor holding .git; the cwd outside a
// repository; never above home unless the cwd is outside it) down to the
// cwd. Files are deduplicated by real path; empty files are skipped.
func ContextFiles(cwd, agentDir, home string) ([]ContextFile, []string) {
	var paths []string
	if agentDir != "" {
		paths = append(paths, filepath.Join(agentDir, "AGENTS.md"))
	}
	if d := ProjectDir(cwd, home); d != "" {
		paths = append(paths, filepath.Join(d, "AGENTS.md"))
	}
	for _, dir := range chain(RepoRoot(cwd, home), cwd) {
		paths = append(paths, filepath.Join(dir, "AGENTS.md"), filepath.Join(dir, "CLAUDE.md"))
	}
	var out []ContextFile
	var warns []string
	seen := map[string]bool{}
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		text, cut, err := readCapped(real, maxContextFile)
		if err != nil || strings.TrimSpace(text) == "" {
			continue
		}
		disp := displayPath(p, cwd, home)
		if cut {
			text += "\n[truncated]"
			warns = append(warns, disp+" is larger than 64 KiB: truncated in the system prompt")
		}
		out = append(out, ContextFile{Path: disp, Abs: p, Content: strings.TrimRight(text, "\n")})
	}
	return out, warns
}

// RepoRoot returns the nearest ancestor of cwd (cwd included) holding a
// .git entry, not going above home unless cwd is outside it; cwd when
// there is none.
func RepoRoot(cwd, home string) string {
	inHome := home != "" && within(cwd, home)
	for dir := cwd; ; {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir || (inHome && dir == home) {
			return cwd
		}
		dir = parent
	}
}

// chain lists the directories from root down to cwd (both included);
// root must be cwd or one of its ancestors.
func chain(root, cwd string) []string {
	var rev []string
	for dir := cwd; ; dir = filepath.Dir(dir) {
		rev = append(rev, dir)
		if dir == root || dir == filepath.Dir(dir) {
			break
		}
	}
	out := make([]string, len(rev))
	for i, d := range rev {
		out[len(rev)-1-i] = d
	}
	return out
}

func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// displayPath is p relative to cwd when inside it, else ~/… when inside
// home, else absolute.
func displayPath(p, cwd, home string) string {
	if within(p, cwd) {
		if rel, err := filepath.Rel(cwd, p); err == nil {
			return rel
		}
	}
	if home != "" && within(p, home) {
		rel, _ := filepath.Rel(home, p)
		return "~/" + filepath.ToSlash(rel)
	}
	return p
}

// readCapped reads at most limit bytes of path, cut back to a whole UTF-8
// character, and reports whether there was more.
func readCapped(path string, limit int) (string, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", false, os.ErrInvalid
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return "", false, err
	}
	if len(b) <= limit {
		return string(b), false, nil
	}
	b = b[:limit]
	for len(b) > 0 && b[len(b)-1]&0xC0 == 0x80 {
		b = b[:len(b)-1]
	}
	if len(b) > 0 && b[len(b)-1] >= 0xC0 {
		b = b[:len(b)-1]
	}
	return string(b), true, nil
}
