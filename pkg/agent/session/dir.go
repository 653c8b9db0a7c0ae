package session

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

var pathChars = strings.NewReplacer("/", "-", "\\", "-", ":", "-")

// EncodeCwd returns the current directory-name encoding of cwd:
// "-" + the home-relative path for cwd under home, "-tmp-" + the
// temp-relative path under tmp, else "--" + the absolute path + "--", with
// '/', '\' and ':' replaced by '-'.
func EncodeCwd(cwd, home, tmp string) string {
	cwd = filepath.Clean(cwd)
	if rel, ok := under(cwd, home); ok {
		if rel == "" {
			return "-"
		}
		return "-" + pathChars.Replace(rel)
	}
	if rel, ok := under(cwd, tmp); ok && rel != "" {
		return "-tmp-" + pathChars.Replace(rel)
	}
	return LegacyEncodeCwd(cwd)
}

// LegacyEncodeCwd returns the pi-lineage "--<path>--" encoding.
func LegacyEncodeCwd(cwd string) string {
	return "--" + pathChars.Replace(strings.TrimPrefix(filepath.Clean(cwd), "/")) + "--"
}

func under(p, root string) (string, bool) {
	if root == "" {
		return "", false
	}
	root = filepath.Clean(root)
	if p == root {
		return "", true
	}
	if rel, ok := strings.CutPrefix(p, root+string(filepath.Separator)); ok {
		return rel, true
	}
	return "", false
}

// Dirs returns the session directories of cwd under agentDir: the current
// encoding first, then the legacy one when it differs.
func Dirs(agentDir, cwd, home string) []string {
	base := filepath.Join(agentDir, "sessions")
	cur := filepath.Join(base, EncodeCwd(cwd, home, os.TempDir()))
	legacy := filepath.Join(base, LegacyEncodeCwd(cwd))
	if legacy == cur {
		return []string{cur}
	}
	return []string{cur, legacy}
}

// Info describes a session file found on disk.
type Info struct {
	Path    string
	ID      string
	Cwd     string
	ModTime time.Time
}

// List returns the valid session files of dirs, newest first (by mtime,
// then header timestamp, then path). Files with a bad header are skipped.
func List(dirs ...string) []Info {
	var out []Info
	type ranked struct {
		Info
		ts string
	}
	var all []ranked
	for _, d := range dirs {
		names, _ := filepath.Glob(filepath.Join(d, "*.jsonl"))
		for _, p := range names {
			h, ok := readHeader(p)
			if !ok {
				continue
			}
			st, err := os.Stat(p)
			if err != nil {
				continue
			}
			all = append(all, ranked{Info{Path: p, ID: h.ID, Cwd: h.Cwd, ModTime: st.ModTime()}, h.Timestamp})
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if !a.ModTime.Equal(b.ModTime) {
			return a.ModTime.After(b.ModTime)
		}
		if a.ts != b.ts {
			return a.ts > b.ts
		}
		return a.Path > b.Path
	})
	for _, r := range all {
		out = append(out, r.Info)
	}
	return out
}

// MostRecent returns the newest valid session file of dirs, or "".
func MostRecent(dirs ...string) string {
	if l := List(dirs...); len(l) > 0 {
		return l[0].Path
	}
	return ""
}

// readHeader reads the header of a session file without loading it.
func readHeader(path string) (Header, bool) {
	fh, err := os.Open(path)
	if err != nil {
		return Header{}, false
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for i := 0; i < 2 && sc.Scan(); i++ {
		var probe struct {
			Type string `json:"type"`
			ID   any    `json:"id"`
		}
		if json.Unmarshal(sc.Bytes(), &probe) != nil {
			return Header{}, false
		}
		if probe.Type == TypeTitle && i == 0 {
			continue
		}
		if _, ok := probe.ID.(string); probe.Type != TypeSession || !ok {
			return Header{}, false
		}
		var h Header
		if json.Unmarshal(sc.Bytes(), &h) != nil {
			return Header{}, false
		}
		return h, true
	}
	return Header{}, false
}
