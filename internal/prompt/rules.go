package prompt

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// maxRuleFile bounds how much of a rule file is read.
const maxRuleFile = 256 << 10

// Rule is one rule file.
type Rule struct {
	Name        string
	Path        string
	Content     string
	Globs       []string
	AlwaysApply bool
	Description string
	TTSRTrigger string
}

// Rules are the rules of a session, bucketed: Always are injected whole,
// Book (description-only) are listed in the rulebook and read through
// rule://<name>. TTSR rules and rules with neither are dropped.
type Rules struct {
	Always   []Rule
	Book     []Rule
	Warnings []string
}

// Lookup returns the content of rulebook or always-apply rule name.
func (r *Rules) Lookup(name string) (string, bool) {
	if r == nil {
		return "", false
	}
	for _, l := range [][]Rule{r.Book, r.Always} {
		for _, x := range l {
			if x.Name == name {
				return x.Content, true
			}
		}
	}
	return "", false
}

// ruleSource is one directory of rule files.
type ruleSource struct {
	dir    string
	cursor bool
}

// LoadRules reads the rule sources in priority order, first name wins:
// native <cwd>/.omp/rules then <agentDir>/rules, then Cursor's
// ~/.cursor/rules and <cwd>/.cursor/rules; *.md and *.mdc, by file name
// within a directory.
func LoadRules(cwd, agentDir, home string) *Rules {
	sources := []ruleSource{{filepath.Join(cwd, ".omp", "rules"), false}}
	if agentDir != "" {
		sources = append(sources, ruleSource{filepath.Join(agentDir, "rules"), false})
	}
	if home != "" {
		sources = append(sources, ruleSource{filepath.Join(home, ".cursor", "rules"), true})
	}
	sources = append(sources, ruleSource{filepath.Join(cwd, ".cursor", "rules"), true})
	out := &Rules{}
	seen := map[string]bool{}
	for _, src := range sources {
		ents, err := os.ReadDir(src.dir)
		if err != nil {
			continue
		}
		names := make([]string, 0, len(ents))
		for _, e := range ents {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".md" || ext == ".mdc") {
				names = append(names, e.Name())
			}
		}
		slices.Sort(names)
		for _, n := range names {
			name := strings.TrimSuffix(n, filepath.Ext(n))
			if seen[name] {
				continue
			}
			path := filepath.Join(src.dir, n)
			text, _, err := readCapped(path, maxRuleFile)
			if err != nil {
				continue
			}
			seen[name] = true
			r, warn := ParseRule(name, path, text, src.cursor)
			if warn != "" {
				out.Warnings = append(out.Warnings, warn)
			}
			switch {
			case r.TTSRTrigger != "": // [later]
			case r.AlwaysApply:
				out.Always = append(out.Always, r)
			case r.Description != "":
				out.Book = append(out.Book, r)
			}
		}
	}
	return out
}

// keyValueRE is the fallback front-matter line form.
var keyValueRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\w+):\s*(.*)$`) })

// ParseRule parses one rule file: front matter only when the text starts
// with "---" and has a closing "\n---"; YAML first, `key: value` lines
// (values stay strings) when the YAML does not parse, with a warning. For
// Cursor rules only a boolean alwaysApply: true counts.
func ParseRule(name, path, text string, cursor bool) (Rule, string) {
	r := Rule{Name: name, Path: path, Content: strings.TrimSpace(text)}
	if !strings.HasPrefix(text, "---") {
		return r, ""
	}
	end := strings.Index(text[3:], "\n---")
	if end < 0 {
		return r, ""
	}
	front := text[3 : 3+end]
	body := text[3+end+4:]
	if i := strings.IndexByte(body, '\n'); i >= 0 {
		body = body[i+1:]
	} else {
		body = ""
	}
	r.Content = strings.TrimSpace(body)
	var meta map[string]any
	var warn string
	if err := yaml.Unmarshal([]byte(front), &meta); err != nil || meta == nil {
		if err != nil {
			warn = fmt.Sprintf("rule %s: front matter is not valid YAML (%v); read as key: value lines", path, firstLine(err.Error()))
		}
		meta = map[string]any{}
		for l := range strings.Lines(front) {
			if m := keyValueRE().FindStringSubmatch(strings.TrimRight(l, "\r\n")); m != nil {
				meta[m[1]] = m[2]
			}
		}
	}
	switch g := meta["globs"].(type) {
	case string:
		for p := range strings.SplitSeq(g, ",") {
			if p = strings.TrimSpace(p); p != "" {
				r.Globs = append(r.Globs, p)
			}
		}
	case []any:
		for _, v := range g {
			if s, ok := v.(string); ok && s != "" {
				r.Globs = append(r.Globs, s)
			}
		}
	}
	switch v := meta["alwaysApply"].(type) {
	case bool:
		r.AlwaysApply = v
	case string:
		r.AlwaysApply = !cursor && v == "true"
	}
	if d, ok := meta["description"].(string); ok {
		r.Description = strings.TrimSpace(d)
	}
	if t, ok := meta["ttsr_trigger"].(string); ok {
		r.TTSRTrigger = t
	}
	return r, warn
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
