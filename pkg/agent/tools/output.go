package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Shared output limits.
const (
	DefaultMaxLines = 2000
	DefaultMaxBytes = 50 * 1024
)

// ansiRE matches CSI and OSC escape sequences.
var ansiRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]`)
})

// Sanitize cleans tool output: strip ANSI CSI/OSC sequences, turn \r\n and lone
// \r into \n, drop C0 controls other than \t and \n, replace invalid UTF-8
// with U+FFFD.
func Sanitize(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = ansiRE().ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// Truncation describes a cut output (details.meta.truncation).
type Truncation struct {
	Direction   string `json:"direction"` // "head" keeps the start, "tail" the end
	TruncatedBy string `json:"truncatedBy"`
	TotalLines  int    `json:"totalLines"`
	TotalBytes  int    `json:"totalBytes"`
	OutputLines int    `json:"outputLines"`
	OutputBytes int    `json:"outputBytes"`
	ShownRange  struct {
		Start int `json:"start"`
		End   int `json:"end"`
	} `json:"shownRange"`
	ArtifactID string `json:"artifactId,omitempty"`
}

// Notice renders the notice appended to truncated output.
func (t *Truncation) Notice() string {
	word := "first"
	if t.Direction == "tail" {
		word = "last"
	}
	s := fmt.Sprintf("\n\n[Showing %s %d of %d lines (%d of %d bytes)", word, t.OutputLines, t.TotalLines, t.OutputBytes, t.TotalBytes)
	if t.ArtifactID != "" {
		s += ". Full: artifact://" + t.ArtifactID
	}
	return s + "]"
}

func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// TruncateHead keeps the start of s: at most maxLines lines and maxBytes
// bytes, cut on a line boundary. It returns nil truncation when s fits.
func TruncateHead(s string, maxLines, maxBytes int) (string, *Truncation) {
	total := countLines(s)
	if total <= maxLines && len(s) <= maxBytes {
		return s, nil
	}
	t := &Truncation{Direction: "head", TotalLines: total, TotalBytes: len(s), TruncatedBy: "lines"}
	end, lines := 0, 0
	for lines < maxLines && end < len(s) {
		i := strings.IndexByte(s[end:], '\n')
		next := len(s)
		if i >= 0 {
			next = end + i + 1
		}
		if next > maxBytes {
			t.TruncatedBy = "bytes"
			break
		}
		end, lines = next, lines+1
	}
	out := strings.TrimSuffix(s[:end], "\n")
	t.OutputLines, t.OutputBytes = lines, len(out)
	t.ShownRange.Start, t.ShownRange.End = 1, lines
	return out, t
}

// TruncateTail keeps the end of s within maxBytes (UTF-8 safe).
func TruncateTail(s string, maxBytes int) (string, *Truncation) {
	if len(s) <= maxBytes {
		return s, nil
	}
	total := countLines(s)
	cut := len(s) - maxBytes
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	// Start on a line boundary when one is near.
	if i := strings.IndexByte(s[cut:], '\n'); i >= 0 && i < maxBytes/2 {
		cut += i + 1
	}
	out := s[cut:]
	t := &Truncation{Direction: "tail", TruncatedBy: "bytes", TotalLines: total, TotalBytes: len(s),
		OutputLines: countLines(out), OutputBytes: len(out)}
	t.ShownRange.Start, t.ShownRange.End = total-t.OutputLines+1, total
	return out, t
}

// Artifacts allocates and reads the session's artifact files
// <dir>/<id>.<tool>.log. Ids are "0", "1", …; the directory is
// created lazily.
type Artifacts struct {
	Dir string

	mu   sync.Mutex
	next int
	init bool
}

var artifactRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\d+)\.`) })

// Allocate reserves the next id and returns it with its file path.
func (a *Artifacts) Allocate(tool string) (id, path string, err error) {
	if a == nil || a.Dir == "" {
		return "", "", fmt.Errorf("no artifacts directory")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.init {
		names, _ := filepath.Glob(filepath.Join(a.Dir, "*.log"))
		for _, n := range names {
			if m := artifactRE().FindStringSubmatch(filepath.Base(n)); m != nil {
				if v, _ := strconv.Atoi(m[1]); v >= a.next {
					a.next = v + 1
				}
			}
		}
		a.init = true
	}
	if err := os.MkdirAll(a.Dir, 0o700); err != nil {
		return "", "", err
	}
	id = strconv.Itoa(a.next)
	a.next++
	return id, filepath.Join(a.Dir, id+"."+tool+".log"), nil
}

// Read returns the text of artifact id (the artifact:// scheme).
func (a *Artifacts) Read(id string) (string, error) {
	if a == nil || a.Dir == "" {
		return "", Errorf("No session - artifacts unavailable")
	}
	if _, err := strconv.Atoi(id); err != nil {
		return "", Errorf("artifact:// ID must be numeric, got: %s", id)
	}
	names, err := filepath.Glob(filepath.Join(a.Dir, "*"))
	if err != nil || len(names) == 0 {
		if _, serr := os.Stat(a.Dir); serr != nil {
			return "", Errorf("No artifacts directory found")
		}
	}
	var ids []string
	for _, n := range names {
		base := filepath.Base(n)
		if strings.HasPrefix(base, id+".") {
			data, err := os.ReadFile(n)
			if err != nil {
				return "", Errorf("artifact://%s: %v", id, err)
			}
			return string(data), nil
		}
		if m := artifactRE().FindStringSubmatch(base); m != nil {
			ids = append(ids, m[1])
		}
	}
	sort.Strings(ids)
	return "", Errorf("artifact://%s not found. Available: %s", id, strings.Join(ids, ", "))
}

// Sink is the streaming output sink of bash: sanitised chunks, an
// in-memory tail of MaxBytes, and, once the output overflows, a mirror of
// the whole stream into an artifact file.
type Sink struct {
	Tool      string
	MaxBytes  int
	Artifacts *Artifacts

	mu         sync.Mutex
	buf        []byte
	total      int
	lines      int
	truncated  bool
	file       *os.File
	artifactID string
	pending    []byte // an incomplete UTF-8 sequence or \r held back
}

// Write implements io.Writer; it never fails.
func (s *Sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data := append(s.pending, p...)
	// Hold back a trailing partial rune and a trailing \r (maybe \r\n).
	keep := 0
	if n := len(data); n > 0 {
		i := n - 1
		for i > 0 && i > n-4 && !utf8.RuneStart(data[i]) {
			i--
		}
		if !utf8.FullRune(data[i:]) {
			keep = n - i
		} else if data[n-1] == '\r' {
			keep = 1
		}
	}
	s.pending = append([]byte(nil), data[len(data)-keep:]...)
	s.add(Sanitize(string(data[:len(data)-keep])))
	return len(p), nil
}

func (s *Sink) add(chunk string) {
	if chunk == "" {
		return
	}
	s.total += len(chunk)
	s.lines += strings.Count(chunk, "\n")
	max := s.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	if s.file != nil {
		_, _ = s.file.WriteString(chunk)
	}
	s.buf = append(s.buf, chunk...)
	if len(s.buf) > max {
		if !s.truncated {
			s.truncated = true
			if s.Artifacts != nil {
				if id, path, err := s.Artifacts.Allocate(s.Tool); err == nil {
					if f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600); err == nil {
						s.file, s.artifactID = f, id
						_, _ = f.Write(s.buf)
					}
				}
			}
		}
		cut := len(s.buf) - max
		for cut < len(s.buf) && !utf8.RuneStart(s.buf[cut]) {
			cut++
		}
		s.buf = append(s.buf[:0], s.buf[cut:]...)
	}
}

// Snapshot returns the current tail.
func (s *Sink) Snapshot() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.buf)
}

// Close flushes held-back bytes, closes the artifact file and returns the
// output with its truncation (nil when it fits).
func (s *Sink) Close() (string, *Truncation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) > 0 {
		p := s.pending
		s.pending = nil
		s.add(Sanitize(string(p)))
	}
	if s.file != nil {
		_ = s.file.Close()
		s.file = nil
	}
	out := string(s.buf)
	if !s.truncated {
		return out, nil
	}
	total := s.lines
	if s.total > 0 && !strings.HasSuffix(out, "\n") {
		total++
	}
	// Start the shown tail on a line boundary.
	if i := strings.IndexByte(out, '\n'); i >= 0 && i < len(out)/2 {
		out = out[i+1:]
	}
	t := &Truncation{Direction: "tail", TruncatedBy: "bytes", TotalLines: total, TotalBytes: s.total,
		OutputLines: countLines(out), OutputBytes: len(out), ArtifactID: s.artifactID}
	t.ShownRange.Start, t.ShownRange.End = total-t.OutputLines+1, total
	return out, t
}
