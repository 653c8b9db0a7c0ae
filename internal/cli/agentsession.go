package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/agent/session"
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
// and then, without --session-dir, in every project's.
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
	match := func(dirs []string) string {
		lv := strings.ToLower(v)
		for _, info := range session.List(dirs...) {
			base := strings.ToLower(filepath.Base(info.Path))
			_, idPart, _ := strings.Cut(base, "_")
			if strings.HasPrefix(strings.ToLower(info.ID), lv) || strings.HasPrefix(base, lv) || strings.HasPrefix(idPart, lv) {
				return info.Path
			}
		}
		return ""
	}
	p := match(sdirs)
	if p == "" && !explicitDir {
		all, _ := filepath.Glob(filepath.Join(agentDir, "sessions", "*"))
		p = match(all)
	}
	if p == "" {
		return nil, fmt.Errorf("Session %q not found.", v)
	}
	return session.Open(p)
}
