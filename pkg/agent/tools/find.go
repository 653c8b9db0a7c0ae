package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// FindDetails are the details of a find result.
type FindDetails struct {
	ScopePath    string `json:"scopePath"`
	Count        int    `json:"count"`
	Truncated    bool   `json:"truncated"`
	LimitReached bool   `json:"limitReached"`
}

// Find returns the find tool.
func Find(env *Env) *Tool {
	return &Tool{
		Name: "find",
		Description: "Find files by glob (e.g. **/*.go, *_test.go; a pattern without / matches names at any depth). " +
			"Honours .gitignore and never lists .git. One path per line, relative to the working directory, " +
			"directories end in /. Default limit 1000; sorted by path, or newest first with sortByMtime.",
		Parameters: rawSchema(`{"type":"object","properties":{
			"pattern":{"type":"string","description":"Glob pattern"},
			"path":{"type":"string","description":"Directory to search (default: working directory)"},
			"limit":{"type":"number","description":"Maximum results (default 1000)"},
			"hidden":{"type":"boolean","description":"Include dot files"},
			"type":{"type":"string","enum":["file","dir","all"]},
			"sortByMtime":{"type":"boolean"}},"required":["pattern"]}`),
		Run: func(ctx context.Context, args map[string]any, _ func(Result)) (Result, error) {
			return runFind(ctx, env, args)
		},
	}
}

func runFind(ctx context.Context, env *Env, args map[string]any) (Result, error) {
	pattern := strings.TrimPrefix(str(args, "pattern"), "./")
	limit, ok := num(args, "limit")
	if !ok || limit <= 0 {
		limit = 1000
	}
	kind := str(args, "type")
	if kind == "" {
		kind = "file"
	}
	scope := env.Cwd
	if p := str(args, "path"); p != "" {
		scope = env.Resolve(p)
	}
	if st, err := os.Stat(scope); err != nil || !st.IsDir() {
		return Result{}, Errorf("Directory not found: %s", str(args, "path"))
	}
	type hit struct {
		path string
		mod  time.Time
	}
	var hits []hit
	err := walk(ctx, scope, walkOptions{hidden: boolean(args, "hidden"), gitignore: true}, func(rel string, d fs.DirEntry) error {
		if d.IsDir() && kind == "file" || !d.IsDir() && kind == "dir" {
			return nil
		}
		target := rel
		if !strings.Contains(pattern, "/") {
			target = filepath.Base(rel)
		}
		if !globMatch(pattern, target) {
			return nil
		}
		p := env.Rel(filepath.Join(scope, rel))
		if d.IsDir() {
			p += "/"
		}
		h := hit{path: p}
		if info, err := d.Info(); err == nil {
			h.mod = info.ModTime()
		}
		hits = append(hits, h)
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return Result{}, Errorf("find: %v", err)
	}
	if boolean(args, "sortByMtime") {
		sort.SliceStable(hits, func(i, j int) bool { return hits[i].mod.After(hits[j].mod) })
	} else {
		sort.Slice(hits, func(i, j int) bool { return hits[i].path < hits[j].path })
	}
	d := FindDetails{ScopePath: env.Rel(scope), Count: len(hits)}
	if len(hits) == 0 {
		return TextResult("No files found", d), nil
	}
	if len(hits) > limit {
		hits, d.LimitReached = hits[:limit], true
	}
	lines := make([]string, len(hits))
	for i, h := range hits {
		lines[i] = h.path
	}
	text, tr := TruncateHead(strings.Join(lines, "\n"), 1<<30, DefaultMaxBytes)
	if tr != nil {
		d.Truncated = true
	}
	if d.LimitReached || tr != nil {
		text += fmt.Sprintf("\n\n[Result limit reached (%d). Use a more specific pattern or raise limit]", limit)
	}
	return TextResult(text, d), nil
}
