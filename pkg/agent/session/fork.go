package session

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Fork copies the session at src into a new session file in dir:
// a header with a new id and timestamp and parentSession = the old id,
// every other line unchanged (the title slot and unknown lines included),
// and the artifacts directory copied best effort. cwd replaces the
// header's cwd when not empty (--fork into the current directory).
func Fork(src, dir, cwd string, now func() time.Time) (*File, error) {
	old, err := Open(src)
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	t := now()
	f := &File{byID: old.byID, leaf: old.leaf, now: time.Now, header: old.header}
	headerDone := false
	for _, l := range old.lines {
		if headerDone || l.entry != nil || isTitle(l.raw) {
			f.lines = append(f.lines, l)
			continue
		}
		headerDone = true
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(l.raw, &obj); err != nil {
			return nil, fmt.Errorf("session: fork: %w", err)
		}
		set := func(k string, v any) { obj[k], _ = json.Marshal(v) }
		set("id", id.String())
		set("timestamp", FormatTime(t))
		set("parentSession", old.header.ID)
		if cwd != "" {
			set("cwd", cwd)
		}
		raw, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		f.lines = append(f.lines, line{raw: raw})
		f.header.ID, f.header.Timestamp, f.header.ParentSession = id.String(), FormatTime(t), old.header.ID
		if cwd != "" {
			f.header.Cwd = cwd
		}
	}
	f.path = filepath.Join(dir, FileName(t, id.String()))
	if err := f.writeAll(); err != nil {
		return nil, err
	}
	copyTree(old.ArtifactsDir(), f.ArtifactsDir())
	return f, nil
}

// copyTree copies the regular files under src to dst, best effort.
func copyTree(src, dst string) {
	_ = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			_ = os.MkdirAll(target, 0o700)
			return nil
		}
		if !d.Type().IsRegular() || strings.HasPrefix(rel, "..") {
			return nil
		}
		if data, err := os.ReadFile(p); err == nil {
			_ = os.WriteFile(target, data, 0o600)
		}
		return nil
	})
}
