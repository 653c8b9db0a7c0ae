package session

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// ErrNotSession reports a file whose header is missing or malformed. Such
// a file is never modified.
var ErrNotSession = errors.New("the session header is missing or malformed")

// HeaderError is returned by Open for a file that is not a session file.
type HeaderError struct{ Path string }

func (e *HeaderError) Error() string {
	return fmt.Sprintf("Cannot resume session %q: the session header is missing or malformed. The file was not modified.", e.Path)
}

// Unwrap returns ErrNotSession.
func (e *HeaderError) Unwrap() error { return ErrNotSession }

// line is one line of the file, kept verbatim. entry is nil for the
// title slot, the header and lines that do not parse.
type line struct {
	raw   []byte
	entry *Entry
}

// File is an open session: the lines of its file, the entry tree and the
// leaf. A File with an empty path is in memory only (--no-session).
type File struct {
	mu sync.Mutex // guards everything below

	path   string
	header Header
	lines  []line
	byID   map[string]*Entry
	leaf   string

	// onDisk is true once the file holds every line; later appends write
	// one line each. A new session stays in memory until Persist.
	onDisk bool
	// dropTail is the length of a truncated last line to cut before the
	// first append (a crash during an append).
	dropTail int64
	// now is the clock (time.Now).
	now func() time.Time
	// blobsDir is the global blob store ("" = no blob handling).
	blobsDir string
	// cache holds the decoded context message of each entry seen by
	// BuildContext or EntryMessages (a zero Message: none).
	cache map[*Entry]Message
}

// Options configure Create.
type Options struct {
	// ParentSession is written to the header when set.
	ParentSession string
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Create starts a new session for cwd whose file will be dir/<ts>_<id>.jsonl
// (dir "" = in memory). Nothing is written until Persist or the first
// assistant message is appended.
func Create(dir, cwd string, opt Options) (*File, error) {
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("session id: %w", err)
	}
	t := now()
	h := Header{Version: CurrentVersion, ID: id.String(), Timestamp: FormatTime(t), Cwd: cwd, ParentSession: opt.ParentSession}
	raw, err := json.Marshal(struct {
		Type string `json:"type"`
		Header
	}{TypeSession, h})
	if err != nil {
		return nil, err
	}
	f := &File{header: h, byID: map[string]*Entry{}, now: now, lines: []line{{raw: raw}}}
	if dir != "" {
		f.path = filepath.Join(dir, FileName(t, h.ID))
	}
	return f, nil
}

// CreateAt starts a new session whose file will be path (--resume of a
// missing file, as 18.1.21 does).
func CreateAt(path, cwd string, opt Options) (*File, error) {
	f, err := Create(filepath.Dir(path), cwd, opt)
	if err != nil {
		return nil, err
	}
	f.path = path
	return f, nil
}

// FileName returns "<timestamp>_<id>.jsonl" with ':' and '.' of the ISO
// timestamp replaced by '-'.
func FileName(t time.Time, id string) string {
	ts := strings.NewReplacer(":", "-", ".", "-").Replace(FormatTime(t))
	return ts + "_" + id + ".jsonl"
}

// Open loads a session file. A missing file is an fs.ErrNotExist error; a
// bad header a *HeaderError. Files of versions 1 and 2 are migrated and
// rewritten; a truncated last line is ignored.
func Open(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := parse(data)
	if err != nil {
		if errors.Is(err, ErrNotSession) {
			abs, _ := filepath.Abs(path)
			return nil, &HeaderError{Path: abs}
		}
		return nil, err
	}
	f.path, f.onDisk, f.now = path, true, time.Now
	if f.header.Version < CurrentVersion {
		if err := f.migrate(); err != nil {
			return nil, err
		}
		if err := f.rewrite(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Parse reads a session from data, in memory (no path). It is Open without
// the file system, for tests and tools.
func Parse(data []byte) (*File, error) {
	f, err := parse(data)
	if err != nil {
		return nil, err
	}
	f.now = time.Now
	if f.header.Version < CurrentVersion {
		if err := f.migrate(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func parse(data []byte) (*File, error) {
	// Sized once for every line: a long session is thousands of entries.
	n := bytes.Count(data, []byte{'\n'}) + 1
	f := &File{byID: make(map[string]*Entry, n), lines: make([]line, 0, n)}
	entries := make([]Entry, 0, n) // never grown: lines point into it
	rest := data
	headerSeen := false
	for len(rest) > 0 {
		raw, after, found := bytes.Cut(rest, []byte{'\n'})
		rest = after
		if !found {
			// The last line has no newline: keep it if it parses, else it is
			// a crashed append, cut before the next write.
			if !json.Valid(raw) {
				f.dropTail = int64(len(raw))
				break
			}
			// A complete last line: the next append starts a new line.
			f.dropTail = -1
		}
		raw = bytes.TrimSuffix(raw, []byte{'\r'})
		if !headerSeen {
			var probe struct {
				Type string `json:"type"`
				ID   any    `json:"id"`
			}
			if len(bytes.TrimSpace(raw)) == 0 {
				continue
			}
			if json.Unmarshal(raw, &probe) != nil {
				return nil, ErrNotSession
			}
			if probe.Type == TypeTitle && len(f.lines) == 0 {
				f.lines = append(f.lines, line{raw: raw})
				continue
			}
			if _, ok := probe.ID.(string); probe.Type != TypeSession || !ok {
				return nil, ErrNotSession
			}
			if err := json.Unmarshal(raw, &f.header); err != nil {
				return nil, ErrNotSession
			}
			if f.header.Version == 0 {
				f.header.Version = 1
			}
			headerSeen = true
			f.lines = append(f.lines, line{raw: raw})
			continue
		}
		l := line{raw: raw}
		if e, ok := parseEntry(raw); ok {
			entries = append(entries, e)
			l.entry = &entries[len(entries)-1]
			if e.ID != "" {
				f.byID[e.ID] = l.entry
				f.leaf = e.ID
			}
		}
		f.lines = append(f.lines, l)
	}
	if !headerSeen {
		return nil, ErrNotSession
	}
	return f, nil
}

// Path returns the session file path ("" in memory).
func (f *File) Path() string { return f.path }

// Header returns the decoded header.
func (f *File) Header() Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.header
}

// HeaderJSON returns the header line verbatim.
func (f *File) HeaderJSON() json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range f.lines {
		if l.entry == nil && !isTitle(l.raw) {
			return l.raw
		}
	}
	return nil
}

func isTitle(raw []byte) bool {
	return bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`{"type":"title"`))
}

// ArtifactsDir returns the session's artifacts directory ("" in memory).
func (f *File) ArtifactsDir() string {
	if f.path == "" {
		return ""
	}
	return strings.TrimSuffix(f.path, ".jsonl")
}

// Leaf returns the current leaf id ("" when the next append is a root).
func (f *File) Leaf() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leaf
}

// Entry returns the entry with id.
func (f *File) Entry(id string) (*Entry, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.byID[id]
	return e, ok
}

// Entries returns every entry in file order.
func (f *File) Entries() []*Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*Entry, 0, len(f.lines))
	for _, l := range f.lines {
		if l.entry != nil {
			out = append(out, l.entry)
		}
	}
	return out
}

// Branch moves the leaf to id (not persisted, as in the reference).
func (f *File) Branch(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.byID[id]; !ok {
		return fmt.Errorf("session: entry %q not found", id)
	}
	f.leaf = id
	return nil
}

// ResetLeaf makes the next append a new root.
func (f *File) ResetLeaf() {
	f.mu.Lock()
	f.leaf = ""
	f.mu.Unlock()
}

// newID returns 8 lowercase hex characters not used in the file yet.
func (f *File) newID() string {
	var b [4]byte
	for {
		_, _ = rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		if _, dup := f.byID[id]; !dup {
			return id
		}
	}
}

// Append adds an entry of type typ whose type-specific fields are the
// JSON object fields (nil = none) under the leaf, moves the leaf to it and
// returns it. A message entry holding an assistant message persists a new
// session.
func (f *File) Append(typ string, fields any) (*Entry, error) {
	var body []byte
	if fields != nil {
		b, err := json.Marshal(fields)
		if err != nil {
			return nil, fmt.Errorf("session: encode %s: %w", typ, err)
		}
		if len(b) < 2 || b[0] != '{' {
			return nil, fmt.Errorf("session: %s fields must be an object", typ)
		}
		body = b
	}
	return f.appendRaw(typ, body, false)
}

// AppendMessage appends a message entry holding m.Raw, with large images
// moved to the blob store when one is set.
func (f *File) AppendMessage(m Message) (*Entry, error) {
	m, err := f.externalize(m)
	if err != nil {
		return nil, err
	}
	body := make([]byte, 0, len(m.Raw)+16)
	body = append(body, `{"message":`...)
	body = append(body, m.Raw...)
	body = append(body, '}')
	return f.appendRaw(TypeMessage, body, m.Role == "assistant")
}

// AppendModelChange records the model for role ("" = default) with both
// spellings.
func (f *File) AppendModelChange(provider, modelID, role string) (*Entry, error) {
	if role == "default" {
		role = ""
	}
	return f.Append(TypeModelChange, ModelChange{Model: provider + "/" + modelID, Provider: provider, ModelID: modelID, Role: role})
}

// AppendThinkingLevel records a thinking level change.
func (f *File) AppendThinkingLevel(level string) (*Entry, error) {
	return f.Append(TypeThinkingLevelChange, struct {
		ThinkingLevel string `json:"thinkingLevel"`
	}{level})
}

// entryBase is the members every entry line starts with, in the
// reference's order.
type entryBase struct {
	Type      string  `json:"type"`
	ID        string  `json:"id"`
	ParentID  *string `json:"parentId"`
	Timestamp string  `json:"timestamp"`
}

func (f *File) appendRaw(typ string, fields []byte, persist bool) (*Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.newID()
	ts := FormatTime(f.now())
	base := entryBase{Type: typ, ID: id, Timestamp: ts}
	if f.leaf != "" {
		base.ParentID = &f.leaf
	}
	head, err := json.Marshal(base)
	if err != nil {
		return nil, fmt.Errorf("session: encode %s: %w", typ, err)
	}
	b := make([]byte, 0, len(head)+len(fields))
	b = append(b, head[:len(head)-1]...)
	if len(fields) > 2 {
		b = append(b, ',')
		b = append(b, fields[1:len(fields)-1]...)
	}
	b = append(b, '}')
	b = truncateLarge(b)
	e := &Entry{Type: typ, ID: id, ParentID: f.leaf, Timestamp: ts, Raw: b}
	f.lines = append(f.lines, line{raw: b, entry: e})
	f.byID[id] = e
	f.leaf = id
	switch {
	case f.path == "":
	case f.onDisk:
		if err := f.appendLine(b); err != nil {
			return e, err
		}
	case persist:
		if err := f.writeAll(); err != nil {
			return e, err
		}
	}
	return e, nil
}

// Persist writes a new session's file now (fork, export, or an explicit
// flush). It is a no-op in memory or when the file is already on disk.
func (f *File) Persist() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.path == "" || f.onDisk {
		return nil
	}
	return f.writeAll()
}

func (f *File) writeAll() error {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	if err := f.writeFile(f.path); err != nil {
		return err
	}
	f.onDisk = true
	return nil
}

// rewrite replaces the file with the in-memory lines through a temp file
// in the same directory and a rename.
func (f *File) rewrite() error {
	tmp, err := os.CreateTemp(filepath.Dir(f.path), ".session-*.tmp")
	if err != nil {
		return fmt.Errorf("session: rewrite: %w", err)
	}
	name := tmp.Name()
	_ = tmp.Close()
	if err := f.writeFile(name); err != nil {
		_ = os.Remove(name)
		return err
	}
	if err := os.Rename(name, f.path); err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("session: rewrite: %w", err)
	}
	f.dropTail = 0
	return nil
}

func (f *File) writeFile(path string) error {
	var buf bytes.Buffer
	for _, l := range f.lines {
		buf.Write(l.raw)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("session: write %s: %w", path, err)
	}
	return nil
}

func (f *File) appendLine(b []byte) error {
	fh, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("session: append: %w", err)
	}
	defer fh.Close()
	switch {
	case f.dropTail > 0:
		// Cut the truncated last line left by a crash, then append.
		st, err := fh.Stat()
		if err != nil {
			return fmt.Errorf("session: append: %w", err)
		}
		if err := fh.Truncate(st.Size() - f.dropTail); err != nil {
			return fmt.Errorf("session: append: %w", err)
		}
	case f.dropTail < 0:
		if _, err := fh.Write([]byte{'\n'}); err != nil {
			return fmt.Errorf("session: append: %w", err)
		}
	}
	f.dropTail = 0
	line := make([]byte, 0, len(b)+1)
	line = append(append(line, b...), '\n')
	if _, err := fh.Write(line); err != nil {
		return fmt.Errorf("session: append: %w", err)
	}
	return nil
}

// maxStringChars is the persistence truncation threshold.
const maxStringChars = 500_000

const truncatedNotice = "[Session persistence truncated large content]"

// truncateLarge applies the persistence transform to an entry line:
// strings over 500,000 characters are cut with a notice and signature
// fields are cleared. A line shorter than the threshold cannot hold such
// a string and is returned as is.
func truncateLarge(b []byte) []byte {
	if len(b) <= maxStringChars {
		return b
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	changed := false
	var walk func(x any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case string:
			if r := []rune(t); len(r) > maxStringChars {
				changed = true
				return string(r[:maxStringChars]) + truncatedNotice
			}
		case []any:
			for i := range t {
				t[i] = walk(t[i])
			}
		case map[string]any:
			for k, val := range t {
				if s, ok := val.(string); ok && len(s) > maxStringChars &&
					(k == "thinkingSignature" || k == "thoughtSignature" || k == "textSignature") {
					t[k] = ""
					changed = true
					continue
				}
				t[k] = walk(val)
			}
		}
		return x
	}
	v = walk(v)
	if !changed {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}
