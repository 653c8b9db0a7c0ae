package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// EditDetails are the details of an edit result.
type EditDetails struct {
	Diff             string `json:"diff"`
	FirstChangedLine int    `json:"firstChangedLine"`
}

const bom = "\uFEFF"

// Edit returns the replace variant of the edit tool.
func Edit(env *Env) *Tool {
	return &Tool{
		Name: "edit",
		Description: "Edit a file by exact text replacement. Each edit replaces old_text with new_text; old_text must " +
			"match exactly (whitespace and newlines included) and be unique unless all is true. Edits apply in order, " +
			"all or nothing. Read the file first.",
		Parameters: rawSchema(`{"type":"object","properties":{
			"path":{"type":"string","description":"File path, relative to the working directory"},
			"edits":{"type":"array","minItems":1,"items":{"type":"object","properties":{
				"old_text":{"type":"string","description":"Exact text to replace"},
				"new_text":{"type":"string","description":"Replacement text"},
				"all":{"type":"boolean","description":"Replace every occurrence"}},
				"required":["old_text","new_text"]}}},"required":["path","edits"]}`),
		Normalize: normalizeEdit,
		Check: func(args map[string]any) error {
			if _, ok := args["input"]; ok {
				return Errorf("edit takes {path, edits:[{old_text, new_text, all?}]}; patch-text input is not supported")
			}
			return nil
		},
		Run: func(_ context.Context, args map[string]any, _ func(Result)) (Result, error) {
			p := str(args, "path")
			abs := env.Resolve(p)
			data, err := os.ReadFile(abs)
			if errors.Is(err, fs.ErrNotExist) {
				return Result{}, Errorf("File not found: %s", p)
			}
			if err != nil {
				return Result{}, Errorf("Cannot read %s: %v", p, err)
			}
			orig := string(data)
			text, hadBOM := strings.CutPrefix(orig, bom)
			crlf := strings.Contains(text, "\r\n")
			text = strings.ReplaceAll(text, "\r\n", "\n")
			start := text
			edits, _ := args["edits"].([]any)
			for _, raw := range edits {
				e, _ := raw.(map[string]any)
				oldT := strings.ReplaceAll(str(e, "old_text"), "\r\n", "\n")
				newT := strings.ReplaceAll(str(e, "new_text"), "\r\n", "\n")
				if text, err = applyEdit(text, oldT, newT, boolean(e, "all"), p); err != nil {
					return Result{}, err
				}
			}
			if text == start {
				return Result{}, Errorf("Edits to %s resulted in no changes being made.", p)
			}
			diff, first := unifiedDiff(start, text, 2)
			out := text
			if crlf {
				out = strings.ReplaceAll(out, "\n", "\r\n")
			}
			if hadBOM {
				out = bom + out
			}
			st, _ := os.Stat(abs)
			if err := writeAtomic(abs, []byte(out), st.Mode().Perm()); err != nil {
				return Result{}, Errorf("Cannot write %s: %v", p, err)
			}
			return TextResult("["+p+"]\n"+previewDiff(diff, 40), EditDetails{Diff: diff, FirstChangedLine: first}), nil
		},
	}
}

// normalizeEdit accepts the flat form {path, old_text, new_text, all?} and
// the aliases oldText/newText and old_string/new_string/replace_all.
func normalizeEdit(args map[string]any) map[string]any {
	alias := func(m map[string]any) {
		for _, a := range [][2]string{{"oldText", "old_text"}, {"old_string", "old_text"}, {"newText", "new_text"},
			{"new_string", "new_text"}, {"replace_all", "all"}} {
			if v, ok := m[a[0]]; ok {
				if _, has := m[a[1]]; !has {
					m[a[1]] = v
				}
				delete(m, a[0])
			}
		}
	}
	alias(args)
	if _, ok := args["edits"]; !ok {
		if _, flat := args["old_text"]; flat {
			e := map[string]any{"old_text": args["old_text"], "new_text": args["new_text"]}
			if v, ok := args["all"]; ok {
				e["all"] = v
			}
			delete(args, "old_text")
			delete(args, "new_text")
			delete(args, "all")
			args["edits"] = []any{e}
		}
	}
	if es, ok := args["edits"].([]any); ok {
		for _, e := range es {
			if m, ok := e.(map[string]any); ok {
				alias(m)
			}
		}
	}
	return args
}

func applyEdit(text, oldT, newT string, all bool, p string) (string, error) {
	if oldT == "" {
		return "", Errorf("old_text must not be empty.")
	}
	n := strings.Count(text, oldT)
	switch {
	case n == 1 || n > 1 && all:
		if all {
			return strings.ReplaceAll(text, oldT, newT), nil
		}
		return strings.Replace(text, oldT, newT, 1), nil
	case n > 1:
		return "", Errorf("%s", occurrences(text, oldT, n, p))
	}
	// Fallback: line-wise equality ignoring trailing whitespace, unique.
	lines := strings.Split(text, "\n")
	want := strings.Split(oldT, "\n")
	for i := range want {
		want[i] = strings.TrimRight(want[i], " \t")
	}
	match := -1
	for i := 0; i+len(want) <= len(lines); i++ {
		ok := true
		for j := range want {
			if strings.TrimRight(lines[i+j], " \t") != want[j] {
				ok = false
				break
			}
		}
		if ok {
			if match >= 0 {
				match = -2
				break
			}
			match = i
		}
	}
	if match < 0 {
		return "", Errorf("Could not find the exact text in %s. The old text must match exactly including all whitespace and newlines.", p)
	}
	out := append([]string{}, lines[:match]...)
	out = append(out, newT)
	out = append(out, lines[match+len(want):]...)
	return strings.Join(out, "\n"), nil
}

func occurrences(text, oldT string, n int, p string) string {
	lines := strings.Split(text, "\n")
	var b strings.Builder
	fmt.Fprintf(&b, "Found %d occurrences in %s", n, p)
	if n > 5 {
		fmt.Fprintf(&b, " (showing first 5 of %d)", n)
	}
	b.WriteString(":\n\n")
	idx := 0
	for k := 0; k < min(n, 5); k++ {
		at := strings.Index(text[idx:], oldT) + idx
		line := strings.Count(text[:at], "\n")
		idx = at + len(oldT)
		if k > 0 {
			b.WriteString("\n")
		}
		for l := max(0, line-5); l <= min(len(lines)-1, line+5); l++ {
			row := fmt.Sprintf("  %d | %s", l+1, lines[l])
			if r := []rune(row); len(r) > 80 {
				row = string(r[:80])
			}
			b.WriteString(row + "\n")
		}
	}
	b.WriteString("\nAdd more context lines to disambiguate.")
	return b.String()
}

// unifiedDiff returns a line diff of a → b as unified hunks with ctx lines
// of context, and the first changed line (1-based, in b). It diffs the
// changed middle after trimming the common prefix and suffix, which is
// what a sequence of replacements produces.
func unifiedDiff(a, b string, ctx int) (string, int) {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	pre := 0
	for pre < len(al) && pre < len(bl) && al[pre] == bl[pre] {
		pre++
	}
	suf := 0
	for suf < len(al)-pre && suf < len(bl)-pre && al[len(al)-1-suf] == bl[len(bl)-1-suf] {
		suf++
	}
	from := max(0, pre-ctx)
	aEnd, bEnd := len(al)-suf, len(bl)-suf
	aTo, bTo := min(len(al), aEnd+ctx), min(len(bl), bEnd+ctx)
	var d strings.Builder
	fmt.Fprintf(&d, "@@ -%d,%d +%d,%d @@\n", from+1, aTo-from, from+1, bTo-from)
	for i := from; i < pre; i++ {
		d.WriteString(" " + al[i] + "\n")
	}
	for i := pre; i < aEnd; i++ {
		d.WriteString("-" + al[i] + "\n")
	}
	for i := pre; i < bEnd; i++ {
		d.WriteString("+" + bl[i] + "\n")
	}
	for i := aEnd; i < aTo; i++ {
		d.WriteString(" " + al[i] + "\n")
	}
	return d.String(), pre + 1
}

func previewDiff(diff string, maxLines int) string {
	lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	if len(lines) <= maxLines {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:maxLines], "\n") + fmt.Sprintf("\n… (%d more diff lines)", len(lines)-maxLines)
}
