package session

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// terminalVars are the terminal-id variables, first non-empty wins.
var terminalVars = []string{"TMUX_PANE", "CMUX_SURFACE_ID", "KITTY_WINDOW_ID", "TERM_SESSION_ID", "WT_SESSION"}

var unsafeID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._-]`) })

// TerminalID returns the sanitised id of the terminal, or "" when
// none of the variables is set. getenv looks a variable up.
func TerminalID(getenv func(string) string) string {
	for _, v := range terminalVars {
		if id := getenv(v); id != "" {
			return unsafeID().ReplaceAllString(id, "_")
		}
	}
	return ""
}

// ReadBreadcrumb returns the session file the terminal last used in cwd
// (<agentDir>/terminal-sessions/<id>: line 1 the cwd, line 2 the file),
// or "" when there is none, it names another cwd or the file is gone.
func ReadBreadcrumb(agentDir, terminalID, cwd string) string {
	if terminalID == "" {
		return ""
	}
	data, err := os.ReadFile(filepath.Join(agentDir, "terminal-sessions", terminalID))
	if err != nil {
		return ""
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) < 2 || lines[0] != cwd || lines[1] == "" {
		return ""
	}
	if _, err := os.Stat(lines[1]); err != nil {
		return ""
	}
	return lines[1]
}

// WriteBreadcrumb records path as the terminal's session for cwd. Failures
// are ignored: the breadcrumb is a convenience.
func WriteBreadcrumb(agentDir, terminalID, cwd, path string) {
	if terminalID == "" || path == "" {
		return
	}
	dir := filepath.Join(agentDir, "terminal-sessions")
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return
	}
	_ = os.WriteFile(filepath.Join(dir, terminalID), []byte(cwd+"\n"+abs+"\n"), 0o600)
}
