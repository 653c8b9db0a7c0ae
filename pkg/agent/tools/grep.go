package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// GrepDetails are the details of a grep result.
type GrepDetails struct {
	ScopePath         string `json:"scopePath"`
	MatchCount        int    `json:"matchCount"`
	FileCount         int    `json:"fileCount"`
	Mode              string `json:"mode"`
	Truncated         bool   `json:"truncated"`
	MatchLimitReached bool   `json:"matchLimitReached,omitempty"`
	LinesTruncated    bool   `json:"linesTruncated,omitempty"`
}

const grepLineMax = 512

var errStop = errors.New("stop")

// Grep returns the grep tool on the built-in Go walker.
func Grep(env *Env) *Tool {
	return &Tool{
		Name: "grep",
		Description: "Search file contents with a regular expression (Go RE2 syntax: no lookaround or backreferences). " +
			"Honours .gitignore and skips .git. Smart case unless ignoreCase is set. Output modes: content " +
			"(path:LINE: text, context lines path-LINE- text), files_with_matches, count. Paths are relative to the " +
			"working directory. Default limit 100 matches; lines are cut at 512 characters and output at 50KB.",
		Parameters: rawSchema(`{"type":"object","properties":{
			"pattern":{"type":"string","description":"Regular expression"},
			"path":{"type":"string","description":"File or directory to search (default: working directory)"},
			"glob":{"type":"string","description":"Only files whose name or path matches this glob, e.g. *.go"},
			"ignoreCase":{"type":"boolean"},
			"literal":{"type":"boolean","description":"Treat pattern as literal text"},
			"multiline":{"type":"boolean","description":"Let . match newlines"},
			"context":{"type":"number","description":"Lines of context around matches"},
			"limit":{"type":"number","description":"Maximum matches (default 100)"},
			"outputMode":{"type":"string","enum":["content","files_with_matches","count"]}},"required":["pattern"]}`),
		Run: func(ctx context.Context, args map[string]any, _ func(Result)) (Result, error) {
			return runGrep(ctx, env, args)
		},
	}
}

func runGrep(ctx context.Context, env *Env, args map[string]any) (Result, error) {
	pattern := str(args, "pattern")
	mode := str(args, "outputMode")
	if mode == "" {
		mode = "content"
	}
	limit, ok := num(args, "limit")
	if !ok || limit <= 0 {
		limit = 100
	}
	cctx, _ := num(args, "context")
	cctx = max(cctx, 0)
	src := pattern
	prefix := ""
	if boolean(args, "literal") {
		src = regexp.QuoteMeta(pattern)
	}
	flags := ""
	if ic, set := args["ignoreCase"].(bool); set && ic || !set && !hasUpper(pattern) {
		flags += "i"
	}
	if boolean(args, "multiline") {
		flags += "s"
	}
	if flags != "" {
		src = "(?" + flags + ")" + src
	}
	re, err := regexp.Compile(src)
	if err != nil {
		prefix = "[Invalid regex, searched as literal text]\n"
		lit := regexp.QuoteMeta(pattern)
		if flags != "" {
			lit = "(?" + flags + ")" + lit
		}
		re = regexp.MustCompile(lit)
	}
	scope := env.Cwd
	if p := str(args, "path"); p != "" {
		scope = env.Resolve(p)
	}
	st, err := os.Stat(scope)
	if err != nil {
		return Result{}, Errorf("Path not found: %s", str(args, "path"))
	}
	glob := str(args, "glob")
	d := GrepDetails{ScopePath: env.Rel(scope), Mode: mode}
	var out strings.Builder
	searchFile := func(abs string) error {
		data, err := os.ReadFile(abs)
		if err != nil || bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0 {
			return nil // unreadable or binary
		}
		text := strings.ReplaceAll(string(data), "\r\n", "\n")
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		rel := env.Rel(abs)
		var hits []int
		for i, l := range lines {
			if re.MatchString(l) {
				hits = append(hits, i)
				if d.MatchCount+len(hits) >= limit {
					break
				}
			}
		}
		if len(hits) == 0 {
			return nil
		}
		d.FileCount++
		d.MatchCount += len(hits)
		switch mode {
		case "files_with_matches":
			out.WriteString(rel + "\n")
		case "count":
			fmt.Fprintf(&out, "%s:%d\n", rel, len(hits))
		default:
			last := -1
			isHit := map[int]bool{}
			for _, h := range hits {
				isHit[h] = true
			}
			for _, h := range hits {
				from, to := max(0, h-cctx), min(len(lines)-1, h+cctx)
				if last >= 0 && from > last+1 {
					out.WriteString("--\n")
				}
				for i := max(from, last+1); i <= to; i++ {
					text := lines[i]
					if r := []rune(text); len(r) > grepLineMax {
						text, d.LinesTruncated = string(r[:grepLineMax])+"…", true
					}
					sep := "-"
					if isHit[i] {
						sep = ":"
					}
					fmt.Fprintf(&out, "%s%s%d%s %s\n", rel, sep, i+1, sep, text)
				}
				last = to
			}
		}
		if d.MatchCount >= limit {
			d.MatchLimitReached = true
			return errStop
		}
		return nil
	}
	if !st.IsDir() {
		_ = searchFile(scope)
	} else {
		err = walk(ctx, scope, walkOptions{hidden: true, gitignore: true}, func(rel string, de fs.DirEntry) error {
			if de.IsDir() || glob != "" && !globMatch(glob, filepath.Base(rel)) && !globMatch(glob, rel) {
				return nil
			}
			return searchFile(filepath.Join(scope, rel))
		})
		if err != nil && !errors.Is(err, errStop) {
			return Result{}, Errorf("grep: %v", err)
		}
	}
	if d.MatchCount == 0 {
		return TextResult(prefix+"No matches found", d), nil
	}
	text, tr := TruncateHead(strings.TrimSuffix(out.String(), "\n"), 1<<30, DefaultMaxBytes)
	if tr != nil {
		d.Truncated = true
		text += tr.Notice()
	}
	if d.MatchLimitReached {
		text += fmt.Sprintf("\n\n[Match limit reached (%d). Refine the pattern or raise limit]", limit)
	}
	return TextResult(prefix+text, d), nil
}

func hasUpper(s string) bool {
	for _, r := range s {
		if unicode.IsUpper(r) {
			return true
		}
	}
	return false
}
