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
)

// Glob returns the glob tool: 18.1.21's second face of the find
// engine, so models continuing a reference session keep working. path is
// a glob, a file or a directory, or a ';'-separated list of them.
func Glob(env *Env) *Tool {
	return &Tool{
		Name: "glob",
		Description: "List files matching globs. path is a glob (e.g. src/**/*.go), a file or a directory, or a " +
			"';'-separated list of them (default: the working directory). Honours .gitignore unless gitignore is " +
			"false, skips dot files unless hidden is true, never lists .git. One path per line relative to the " +
			"working directory; default limit 1000.",
		Parameters: rawSchema(`{"type":"object","properties":{
			"path":{"type":"string","description":"Glob, file or directory; several separated by ;"},
			"hidden":{"type":"boolean"},
			"gitignore":{"type":"boolean","description":"Honour .gitignore (default true)"},
			"limit":{"type":"number","description":"Maximum results (default 1000)"}}}`),
		Run: func(ctx context.Context, args map[string]any, _ func(Result)) (Result, error) {
			limit, ok := num(args, "limit")
			if !ok || limit <= 0 {
				limit = 1000
			}
			opt := walkOptions{hidden: boolean(args, "hidden"), gitignore: true}
			if g, set := args["gitignore"].(bool); set {
				opt.gitignore = g
			}
			specs := strings.Split(str(args, "path"), ";")
			seen := map[string]bool{}
			var out []string
			for _, spec := range specs {
				spec = strings.TrimSpace(spec)
				if spec == "" {
					spec = "."
				}
				// Split into the longest glob-free directory prefix and the pattern.
				root, pattern := spec, ""
				if strings.ContainsAny(spec, "*?[") {
					parts := strings.Split(filepath.ToSlash(spec), "/")
					i := 0
					for i < len(parts) && !strings.ContainsAny(parts[i], "*?[") {
						i++
					}
					root, pattern = strings.Join(parts[:i], "/"), strings.Join(parts[i:], "/")
					if root == "" && strings.HasPrefix(spec, "/") {
						root = "/"
					} else if root == "" {
						root = "."
					}
				}
				abs := env.Resolve(root)
				st, err := os.Stat(abs)
				if err != nil {
					return Result{}, Errorf("Path not found: %s", root)
				}
				add := func(p string) {
					rel := env.Rel(p)
					if !seen[rel] {
						seen[rel] = true
						out = append(out, rel)
					}
				}
				if !st.IsDir() {
					add(abs)
					continue
				}
				err = walk(ctx, abs, opt, func(rel string, d fs.DirEntry) error {
					if d.IsDir() {
						return nil
					}
					if pattern != "" && !globMatch(pattern, rel) && !(!strings.Contains(pattern, "/") && globMatch(pattern, filepath.Base(rel))) {
						return nil
					}
					add(filepath.Join(abs, rel))
					return nil
				})
				if err != nil && !errors.Is(err, errStop) {
					return Result{}, Errorf("glob: %v", err)
				}
			}
			sort.Strings(out)
			d := FindDetails{ScopePath: str(args, "path"), Count: len(out)}
			if len(out) == 0 {
				return TextResult("No files found", d), nil
			}
			if len(out) > limit {
				out, d.LimitReached = out[:limit], true
			}
			text := strings.Join(out, "\n")
			if d.LimitReached {
				text += fmt.Sprintf("\n\n[Result limit reached (%d). Use a more specific pattern or raise limit]", limit)
			}
			return TextResult(text, d), nil
		},
	}
}
