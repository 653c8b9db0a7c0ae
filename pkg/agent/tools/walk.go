package tools

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ignoreRule is one .gitignore pattern, anchored at the directory of its
// file. Supported: blank lines and # comments, a trailing / (directories
// only), a leading or inner / (anchored), *, ? and [..] globs, ** as any
// number of directories. Negations (!) are not supported and skipped.
type ignoreRule struct {
	base    string // directory of the .gitignore, relative to the walk root ("" = root)
	pattern string
	dirOnly bool
	rooted  bool
}

func parseIgnore(base, data string) []ignoreRule {
	var out []ignoreRule
	for _, l := range strings.Split(data, "\n") {
		l = strings.TrimRight(l, " \r\t")
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "!") {
			continue
		}
		r := ignoreRule{base: base}
		if strings.HasSuffix(l, "/") {
			r.dirOnly, l = true, strings.TrimSuffix(l, "/")
		}
		if strings.Contains(l, "/") {
			r.rooted, l = true, strings.TrimPrefix(l, "/")
		}
		r.pattern = l
		out = append(out, r)
	}
	return out
}

func (r ignoreRule) match(rel string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	if r.base != "" {
		var ok bool
		if rel, ok = strings.CutPrefix(rel, r.base+"/"); !ok {
			return false
		}
	}
	if !r.rooted {
		return globMatch(r.pattern, filepath.Base(rel))
	}
	return globMatch(r.pattern, rel)
}

// globMatch matches a slash-separated glob with ** segments.
func globMatch(pattern, name string) bool {
	if !strings.Contains(pattern, "**") {
		ok, _ := filepath.Match(pattern, name)
		return ok
	}
	ps, ns := strings.Split(pattern, "/"), strings.Split(name, "/")
	var rec func(i, j int) bool
	rec = func(i, j int) bool {
		if i == len(ps) {
			return j == len(ns)
		}
		if ps[i] == "**" {
			for k := j; k <= len(ns); k++ {
				if rec(i+1, k) {
					return true
				}
			}
			return false
		}
		if j == len(ns) {
			return false
		}
		ok, _ := filepath.Match(ps[i], ns[j])
		return ok && rec(i+1, j+1)
	}
	return rec(0, 0)
}

// walkOptions control walk.
type walkOptions struct {
	hidden    bool // include dot files and directories
	gitignore bool // honour .gitignore files
}

// walk visits the files and directories under root (never .git), skipping
// ignored paths. fn gets the path relative to root ("/"-separated); a
// non-nil error from fn stops the walk.
func walk(ctx context.Context, root string, o walkOptions, fn func(rel string, d fs.DirEntry) error) error {
	var rules []ignoreRule
	if o.gitignore {
		// .gitignore files of the parent directories up to the repository root.
		for dir := filepath.Dir(root); ; dir = filepath.Dir(dir) {
			if data, err := os.ReadFile(filepath.Join(dir, ".gitignore")); err == nil {
				for _, r := range parseIgnore("", string(data)) {
					r.rooted = false // patterns of a parent only match by name here
					rules = append(rules, r)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil || dir == filepath.Dir(dir) {
				break
			}
		}
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		if rel != "" {
			name := d.Name()
			if name == ".git" || !o.hidden && strings.HasPrefix(name, ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			for _, r := range rules {
				if r.match(rel, d.IsDir()) {
					if d.IsDir() {
						return filepath.SkipDir
					}
					return nil
				}
			}
		}
		if d.IsDir() && o.gitignore {
			if data, err := os.ReadFile(filepath.Join(p, ".gitignore")); err == nil {
				rules = append(rules, parseIgnore(rel, string(data))...)
			}
		}
		if rel == "" {
			return nil
		}
		return fn(rel, d)
	})
}
