package tools

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"
)

// errLayoutFull stops the layout walk once it has seen enough entries.
var errLayoutFull = errors.New("layout: enough entries")

// layoutScanCap bounds how many entries Layout looks at, so a huge
// checkout costs milliseconds, not seconds.
const layoutScanCap = 20000

// Layout renders the directory tree of root for the system prompt:
// .gitignore honoured, .git skipped, at most
// maxDepth levels and maxEntries entries, newest mtime first in each
// directory. Shallow entries are kept before deep ones, so a cut drops the
// deepest levels first. Each line is "<indent>name" with a trailing "/" on
// directories; "" when root cannot be read.
func Layout(ctx context.Context, root string, maxDepth, maxEntries int) string {
	type node struct {
		rel   string
		depth int
		mtime time.Time
		dir   bool
	}
	var all []node
	err := walk(ctx, root, walkOptions{hidden: true, gitignore: true}, func(rel string, d fs.DirEntry) error {
		depth := strings.Count(rel, "/") + 1
		if depth > maxDepth {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		var mt time.Time
		if info, err := d.Info(); err == nil {
			mt = info.ModTime()
		}
		all = append(all, node{rel, depth, mt, d.IsDir()})
		if len(all) >= layoutScanCap {
			return errLayoutFull
		}
		return nil
	})
	if err != nil && !errors.Is(err, errLayoutFull) {
		return ""
	}
	// Choose: shallow first, newest first within a level; a child only with
	// its parent.
	slices.SortStableFunc(all, func(a, b node) int {
		if a.depth != b.depth {
			return a.depth - b.depth
		}
		return b.mtime.Compare(a.mtime)
	})
	kept := map[string]bool{"": true}
	children := map[string][]node{}
	n := 0
	for _, e := range all {
		if n >= maxEntries {
			break
		}
		parent := path.Dir(e.rel)
		if parent == "." {
			parent = ""
		}
		if !kept[parent] {
			continue
		}
		kept[e.rel] = true
		children[parent] = append(children[parent], e) // already newest first
		n++
	}
	var b strings.Builder
	var render func(dir string, indent int)
	render = func(dir string, indent int) {
		for _, e := range children[dir] {
			b.WriteString(strings.Repeat("  ", indent))
			b.WriteString(path.Base(e.rel))
			if e.dir {
				b.WriteByte('/')
			}
			b.WriteByte('\n')
			if e.dir {
				render(e.rel, indent+1)
			}
		}
	}
	render("", 0)
	if n < len(all) {
		b.WriteString("…\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
