package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/agent/export"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// openSession creates, continues or keeps in memory the session.
func (a *app) openSession(f *agentFlags, dirs config.Dirs, cwd, terminal string) (*session.File, error) {
	if f.noSession {
		return session.Create("", cwd, session.Options{})
	}
	sdirs := session.Dirs(dirs.AgentDir, cwd, dirs.Home)
	if f.sessionDir != "" {
		sdirs = []string{f.sessionDir}
	}
	if f.resume != "" {
		return resumeSession(f.resume, sdirs, dirs.AgentDir, f.sessionDir != "", cwd)
	}
	if f.fork != "" {
		src, err := resumeSession(f.fork, sdirs, dirs.AgentDir, f.sessionDir != "", cwd)
		if err != nil {
			return nil, err
		}
		if src.Path() == "" || src.Persist() != nil {
			return nil, errors.New("Fork failed (session not persisted or cancelled)")
		}
		return session.Fork(src.Path(), sdirs[0], cwd, nil)
	}
	if f.cont {
		// The terminal's breadcrumb first, then the newest file.
		if p := session.ReadBreadcrumb(dirs.AgentDir, terminal, cwd); p != "" && f.sessionDir == "" {
			if sf, err := session.Open(p); err == nil {
				return sf, nil
			}
		}
		if p := session.MostRecent(sdirs...); p != "" {
			return session.Open(p)
		}
	}
	return session.Create(sdirs[0], cwd, session.Options{})
}

// resumeSession opens --resume <v>: a value with a path
// separator or a .jsonl suffix is a file (a missing one starts a new
// session there); anything else is a case-insensitive prefix of a session
// id, a file name or the id part of it, searched in the cwd's directories
// and then, without --session-dir, in every project's. A prefix that
// matches more than one session is an error listing them.
func resumeSession(v string, sdirs []string, agentDir string, explicitDir bool, cwd string) (*session.File, error) {
	if strings.ContainsAny(v, `/\`) || strings.HasSuffix(v, ".jsonl") {
		sf, err := session.Open(v)
		if errors.Is(err, fs.ErrNotExist) {
			abs, aerr := filepath.Abs(v)
			if aerr != nil {
				return nil, aerr
			}
			return session.CreateAt(abs, cwd, session.Options{})
		}
		return sf, err
	}
	matches := func(dirs []string) []session.Info {
		lv := strings.ToLower(v)
		var out []session.Info
		seen := map[string]bool{}
		for _, info := range session.List(dirs...) {
			base := strings.ToLower(filepath.Base(info.Path))
			_, idPart, _ := strings.Cut(base, "_")
			if seen[info.Path] {
				continue
			}
			if strings.HasPrefix(strings.ToLower(info.ID), lv) || strings.HasPrefix(base, lv) || strings.HasPrefix(idPart, lv) {
				seen[info.Path] = true
				out = append(out, info)
			}
		}
		return out
	}
	found := matches(sdirs)
	if len(found) == 0 && !explicitDir {
		all, _ := filepath.Glob(filepath.Join(agentDir, "sessions", "*"))
		found = matches(all)
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("Session %q not found.", v)
	case 1:
		return session.Open(found[0].Path)
	}
	return nil, ambiguousSession(v, found)
}

// ambiguousSession is the error of a --resume prefix that matches more
// than one session: each candidate with its id, start time and first
// message, newest first, and a request for a longer prefix.
func ambiguousSession(v string, found []session.Info) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Session prefix %q is ambiguous: it matches %d sessions.\n", v, len(found))
	for _, info := range found {
		start, first := "", "(no messages)"
		if sf, err := session.Open(info.Path); err == nil {
			start = sf.Header().Timestamp
			for _, e := range sf.Entries() {
				if role, text := export.EntryText(e); e.Type == session.TypeMessage && role == string(llm.RoleUser) {
					first = clitext.SafeLine(oneLine(text, 60))
					break
				}
			}
		}
		fmt.Fprintf(&b, "  %s  %s  %s\n", info.ID, start, first)
	}
	b.WriteString("Give a longer prefix (or the file path) to choose one.")
	return errors.New(b.String())
}

// oneLine is text on a single line, cut to at most n runes with "…".
func oneLine(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return text
}
