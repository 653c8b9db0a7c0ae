package compaction

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// maxListedFiles is the <files> cap.
const maxListedFiles = 20

// FileOps are the cumulative file operations the <files> block lists.
type FileOps struct {
	Read     map[string]bool
	Modified map[string]bool
}

// Details is the details object of compaction and branch_summary entries.
type Details struct {
	ReadFiles     []string `json:"readFiles"`
	ModifiedFiles []string `json:"modifiedFiles"`
}

func newFileOps() FileOps { return FileOps{Read: map[string]bool{}, Modified: map[string]bool{}} }

// AddMessage records the read/write/edit tool calls of an assistant
// message. Paths with a URL scheme (artifact://, https://) are not files.
func (f FileOps) AddMessage(m *llm.Message) {
	if m == nil || m.Role != llm.RoleAssistant {
		return
	}
	for _, c := range m.Content {
		if c.Type != llm.ContentToolCall {
			continue
		}
		var args struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(c.Arguments, &args) != nil || args.Path == "" || strings.Contains(args.Path, "://") {
			continue
		}
		switch c.Name {
		case "read":
			f.Read[args.Path] = true
		case "write", "edit":
			f.Modified[args.Path] = true
		}
	}
}

// AddDetails folds in a previous entry's details (raw JSON; ignored when
// it does not decode).
func (f FileOps) AddDetails(raw json.RawMessage) {
	var d Details
	if len(raw) == 0 || json.Unmarshal(raw, &d) != nil {
		return
	}
	for _, p := range d.ReadFiles {
		f.Read[p] = true
	}
	for _, p := range d.ModifiedFiles {
		f.Modified[p] = true
	}
}

// Details returns readFiles = read − modified and modifiedFiles, sorted.
func (f FileOps) Details() Details {
	d := Details{ReadFiles: []string{}, ModifiedFiles: []string{}}
	for p := range f.Read {
		if !f.Modified[p] {
			d.ReadFiles = append(d.ReadFiles, p)
		}
	}
	for p := range f.Modified {
		d.ModifiedFiles = append(d.ModifiedFiles, p)
	}
	slices.Sort(d.ReadFiles)
	slices.Sort(d.ModifiedFiles)
	return d
}

// filesBlocks matches the <files> block and the legacy <read-files> and
// <modified-files> blocks.
var filesBlocks = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?s)\s*<(files|read-files|modified-files)>.*?</(files|read-files|modified-files)>`)
})

// WithFiles strips any earlier file blocks from summary and appends one
// <files> block for ops (none when there are no files), rendered (modified
// files first within the cap, deterministic nesting) relative to cwd.
func WithFiles(summary string, ops FileOps, cwd string) string {
	summary = strings.TrimSpace(filesBlocks().ReplaceAllString(summary, ""))
	block := RenderFiles(ops, cwd)
	if block == "" {
		return summary
	}
	return summary + "\n\n" + block
}

// RenderFiles renders the <files> block, "" for no files.
func RenderFiles(ops FileOps, cwd string) string {
	rel := func(p string) string {
		if cwd != "" && filepath.IsAbs(p) {
			if r, err := filepath.Rel(cwd, p); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
				return r
			}
		}
		return filepath.Clean(p)
	}
	read, mod := map[string]bool{}, map[string]bool{}
	for p := range ops.Read {
		read[rel(p)] = true
	}
	for p := range ops.Modified {
		mod[rel(p)] = true
	}
	var modified, readOnly []file
	for p := range mod {
		marker := "Write"
		if read[p] {
			marker = "RW"
		}
		modified = append(modified, file{p, marker})
	}
	for p := range read {
		if !mod[p] {
			readOnly = append(readOnly, file{p, "Read"})
		}
	}
	byPath := func(a, b file) int { return strings.Compare(a.path, b.path) }
	slices.SortFunc(modified, byPath)
	slices.SortFunc(readOnly, byPath)
	all := append(modified, readOnly...)
	if len(all) == 0 {
		return ""
	}
	more := 0
	if len(all) > maxListedFiles {
		more = len(all) - maxListedFiles
		all = all[:maxListedFiles]
	}
	byDir := map[string][]file{}
	var dirs []string
	for _, f := range all {
		d := filepath.Dir(f.path)
		if _, ok := byDir[d]; !ok && d != "." {
			dirs = append(dirs, d)
		}
		byDir[d] = append(byDir[d], f)
	}
	var b strings.Builder
	b.WriteString("<files>\n")
	line := func(f file) { b.WriteString(filepath.Base(f.path) + " (" + f.marker + ")\n") }
	for _, f := range sortedFiles(byDir["."]) {
		line(f)
	}
	slices.Sort(dirs)
	level := map[string]int{}
	for _, d := range dirs {
		lvl, label := 1, d
		best := ""
		for prev := range level {
			if strings.HasPrefix(d, prev+"/") && len(prev) > len(best) {
				best = prev
			}
		}
		if best != "" {
			lvl, label = level[best]+1, strings.TrimPrefix(d, best+"/")
		}
		level[d] = lvl
		b.WriteString(strings.Repeat("#", lvl) + " " + label + "/\n")
		for _, f := range sortedFiles(byDir[d]) {
			line(f)
		}
	}
	if more > 0 {
		b.WriteString("… (" + strconv.Itoa(more) + " more files omitted)\n")
	}
	b.WriteString("</files>")
	return b.String()
}

// file is one listed file and its marker.
type file struct {
	path, marker string
}

func sortedFiles(fs []file) []file {
	slices.SortFunc(fs, func(a, b file) int { return strings.Compare(a.path, b.path) })
	return fs
}

// detailsOf returns the details of a compaction or branch_summary entry
// written by the agent itself (fromExtension is not true).
func detailsOf(e *session.Entry) json.RawMessage {
	var v struct {
		Details       json.RawMessage `json:"details"`
		FromExtension bool            `json:"fromExtension"`
	}
	if e.Decode(&v) != nil || v.FromExtension {
		return nil
	}
	return v.Details
}
