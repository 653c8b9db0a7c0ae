package cliproxy

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// maxFileSize bounds one auth file; real ones are a few kilobytes.
const maxFileSize = 4 << 20

// Skip is a file that Scan did not import and why.
type Skip struct {
	File   string
	Reason string // exact reference text
}

// NotFileOrDirError is returned by Scan for a path that is neither a regular
// file nor a directory. Error is the exact reference text.
type NotFileOrDirError struct{ Path string }

// Error returns the exact reference message.
func (e *NotFileOrDirError) Error() string {
	return "Import source is neither file nor directory: " + e.Path
}

// ResolvePath expands a leading "~" to home (as the reference does: a plain
// prefix replacement) and makes the path absolute.
func ResolvePath(path, home string) (string, error) {
	if strings.HasPrefix(path, "~") {
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("expand ~: %w", err)
			}
			home = h
		}
		path = home + path[1:]
	}
	return filepath.Abs(path)
}

// Scan collects the auth files at path (after ResolvePath): the file itself,
// or the regular *.json files of a directory (not recursive, symlinks
// skipped), sorted by full path, and parses each. It returns the importable
// entries and the skipped files in that order. A missing path returns the
// OS error; a path that is neither file nor directory returns
// *NotFileOrDirError.
func Scan(path string, opts Options) ([]Entry, []Skip, error) {
	abs, err := ResolvePath(path, opts.Home)
	if err != nil {
		return nil, nil, err
	}
	files, err := sources(abs)
	if err != nil {
		return nil, nil, err
	}
	var entries []Entry
	var skips []Skip
	for _, f := range files {
		data, err := readFile(f)
		if err != nil {
			skips = append(skips, Skip{File: f, Reason: "unreadable JSON: " + err.Error()})
			continue
		}
		e, err := Parse(data, f, opts)
		var se *SkipError
		if errors.As(err, &se) {
			skips = append(skips, Skip{File: f, Reason: se.Reason})
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, e)
	}
	return entries, skips, nil
}

func sources(abs string) ([]string, error) {
	st, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if st.Mode().IsRegular() {
		return []string{abs}, nil
	}
	if !st.IsDir() {
		return nil, &NotFileOrDirError{Path: abs}
	}
	des, err := os.ReadDir(abs)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, de := range des {
		if de.Type().IsRegular() && strings.HasSuffix(de.Name(), ".json") {
			files = append(files, filepath.Join(abs, de.Name()))
		}
	}
	sort.Strings(files)
	return files, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("file larger than %d bytes", maxFileSize)
	}
	return data, nil
}

// Describe renders an entry as the reference does:
// `<provider>: <email | accountId | (no identity)>[ [expired]][ [disabled]] from <file>`,
// where [expired] means Expires < now.
func Describe(e Entry, now time.Time) string {
	ident := e.Credential.Email
	if ident == "" {
		ident = e.Credential.AccountID
	}
	if ident == "" {
		ident = "(no identity)"
	}
	var b strings.Builder
	b.WriteString(e.Provider + ": " + ident)
	if e.Credential.Expires < now.UnixMilli() {
		b.WriteString(" [expired]")
	}
	if e.Disabled {
		b.WriteString(" [disabled]")
	}
	b.WriteString(" from " + e.File)
	return b.String()
}
