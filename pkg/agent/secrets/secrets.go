// Package secrets is the agent's secret obfuscation: secret values found in
// the environment and in secrets.yml never reach a model. Every outbound
// request is rewritten so that an obfuscate-mode secret becomes a reversible
// placeholder "#XXXX#" and a replace-mode secret a one-way stand-in of the
// same shape; tool-call arguments coming back from the model have their
// placeholders restored before the tool runs, so tools work with the real
// value.
//
// The placeholder code is the first four characters of the uppercase base32
// of HMAC-SHA256(key, secret) with a per-install key kept in
// <agentDir>/secret-placeholder.key (0600). A collision with another secret's
// code adds a counter to the HMAC input. The restorer knows only the codes it
// minted (and the legacy "<<$env:SN>>" form), so text that merely looks like
// a placeholder is left alone.
package secrets

import (
	"cmp"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// KeyFile is the placeholder key's file name in the agent directory.
const KeyFile = "secret-placeholder.key"

// File is a secrets.yml file name (global in the agent dir, project in
// <cwd>/.omp).
const File = "secrets.yml"

// minPlain is the shortest plain obfuscate-mode secret; shorter ones
// are skipped with a warning.
const minPlain = 4

// minEnvValue is the shortest environment value taken as a secret.
const minEnvValue = 8

// maxFile bounds how much of a secrets.yml is read.
const maxFile = 1 << 20

// Mode says what a secret becomes in outbound text.
type Mode string

const (
	// Obfuscate replaces the value with a reversible #XXXX# placeholder.
	Obfuscate Mode = "obfuscate"
	// Replace replaces it one-way with a same-shape string or Replacement.
	Replace Mode = "replace"
)

// Entry is one secrets.yml entry.
type Entry struct {
	Type        string `yaml:"type"`
	Content     string `yaml:"content"`
	Mode        Mode   `yaml:"mode"`
	Replacement string `yaml:"replacement"`
	Flags       string `yaml:"flags"`
}

// envSuffixes are the secret-looking name suffixes (case-insensitive).
var envSuffixes = []string{"_KEY", "_SECRET", "_TOKEN", "_PASSWORD", "_PASSWD", "_PWD",
	"_CREDENTIALS", "_API_KEY", "_ACCESS_KEY"}

// SecretEnvName reports whether an environment variable name looks secret:
// one of the suffixes, or exactly OMP_AUTH_BROKER_TOKEN.
func SecretEnvName(name string) bool {
	if name == "OMP_AUTH_BROKER_TOKEN" {
		return true
	}
	up := strings.ToUpper(name)
	for _, s := range envSuffixes {
		if strings.HasSuffix(up, s) {
			return true
		}
	}
	return false
}

// FromEnviron returns the plain obfuscate entries of the environment
// ("NAME=value" pairs) whose names look secret and whose values are at
// least 8 characters long, in environment order.
func FromEnviron(environ []string) []Entry {
	var out []Entry
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !SecretEnvName(name) || len(val) < minEnvValue {
			continue
		}
		out = append(out, Entry{Type: "plain", Content: val, Mode: Obfuscate})
	}
	return out
}

// ReadFile reads one secrets.yml. A missing file is no entries and no
// error; a file that does not parse, or an entry without a valid type or
// content, is an error naming the file (and the entry's position).
func ReadFile(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxFile)
	}
	var entries []Entry
	if err := yaml.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("%s: not a list of secret entries: %v", path, err)
	}
	for i := range entries {
		e := &entries[i]
		if e.Type != "plain" && e.Type != "regex" {
			return nil, fmt.Errorf("%s: entry %d: type must be \"plain\" or \"regex\", got %q", path, i+1, e.Type)
		}
		if e.Content == "" {
			return nil, fmt.Errorf("%s: entry %d: content is required", path, i+1)
		}
		switch e.Mode {
		case "":
			e.Mode = Obfuscate
		case Obfuscate, Replace:
		default:
			return nil, fmt.Errorf("%s: entry %d: mode must be \"obfuscate\" or \"replace\", got %q", path, i+1, e.Mode)
		}
	}
	return entries, nil
}

// Load collects the secrets of a session: the environment's
// secret-looking variables first, then <agentDir>/secrets.yml and
// <cwd>/.omp/secrets.yml (a project entry overrides a global one with the
// same content; a file entry beats an env secret of the same value). The
// placeholder key is read from, or created in, agentDir. Warnings name
// skipped entries (short plain secrets, regexes RE2 cannot compile).
func Load(agentDir, cwd string, environ []string) (*Obfuscator, []string, error) {
	global, err := ReadFile(filepath.Join(agentDir, File))
	if err != nil {
		return nil, nil, err
	}
	project, err := ReadFile(filepath.Join(cwd, ".omp", File))
	if err != nil {
		return nil, nil, err
	}
	entries := Merge(FromEnviron(environ), global, project)
	if len(entries) == 0 {
		return New(nil, nil)
	}
	key, err := LoadKey(agentDir)
	if err != nil {
		return nil, nil, err
	}
	return New(key, entries)
}

// Merge combines the sources in priority order: later lists override
// earlier entries with the same content (keeping the earlier position).
func Merge(lists ...[]Entry) []Entry {
	var out []Entry
	at := map[string]int{}
	for _, l := range lists {
		for _, e := range l {
			k := e.Type + "\x00" + e.Content
			if i, ok := at[k]; ok {
				out[i] = e
				continue
			}
			at[k] = len(out)
			out = append(out, e)
		}
	}
	return out
}

// KeyExists reports whether agentDir holds a placeholder key (so earlier
// sessions may hold placeholders to restore).
func KeyExists(agentDir string) bool {
	_, err := os.Stat(filepath.Join(agentDir, KeyFile))
	return err == nil
}

// LoadKey reads the 32-byte placeholder key of agentDir, creating it (0600
// in a 0700 directory, written atomically) on first use.
func LoadKey(agentDir string) ([]byte, error) {
	path := filepath.Join(agentDir, KeyFile)
	b, err := os.ReadFile(path)
	if err == nil {
		if len(b) < 16 {
			return nil, fmt.Errorf("%s: key too short (%d bytes); delete it to create a new one", path, len(b))
		}
		return b, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(agentDir, 0o700); err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	rand.Read(key)
	tmp, err := os.CreateTemp(agentDir, KeyFile+".*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, err
	}
	if _, err := tmp.Write(key); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	// Link, not rename: a concurrent first use keeps the key that won.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return LoadKey(agentDir)
		}
		return nil, err
	}
	return key, nil
}

// plain is one literal secret.
type plain struct {
	value string
	mode  Mode
	out   string // the placeholder or the replacement
}

// pattern is one regex secret.
type pattern struct {
	re          *regexp.Regexp
	mode        Mode
	replacement string
}

// Obfuscator rewrites secret values in outbound text and restores its own
// placeholders. The zero of *Obfuscator (nil) does nothing. It is safe for
// concurrent use.
type Obfuscator struct {
	key      []byte
	plains   []plain // longest first
	patterns []pattern

	mu     sync.Mutex
	byCode map[string]string // minted placeholder → value
	byVal  map[string]string // obfuscate value → placeholder
	repl   map[string]string // replace value → replacement
	legacy map[string]string // "<<$env:SN>>" → value
	// literals are the configured plain values: no code may equal one.
	literals map[string]bool
	// sent holds the codes the model has been shown (only those restore).
	sent map[string]bool
	// passive: requests are observed, not rewritten (secrets.enabled off).
	passive bool
}

// New builds an Obfuscator from entries with key (nil when entries is
// empty). The warnings name the entries it skipped.
func New(key []byte, entries []Entry) (*Obfuscator, []string, error) {
	o := &Obfuscator{key: key, byCode: map[string]string{}, byVal: map[string]string{},
		repl: map[string]string{}, legacy: map[string]string{}, literals: map[string]bool{}, sent: map[string]bool{}}
	for _, e := range entries {
		if e.Type == "plain" {
			o.literals[e.Content] = true
		}
	}
	var warns []string
	seen := map[string]bool{}
	envIndex := 0
	for i, e := range entries {
		mode := cmp.Or(e.Mode, Obfuscate)
		switch e.Type {
		case "plain":
			if seen[e.Content] {
				continue
			}
			if mode == Obfuscate && len(e.Content) < minPlain {
				warns = append(warns, fmt.Sprintf("secret entry %d skipped: plain secrets shorter than %d characters are not obfuscated", i+1, minPlain))
				continue
			}
			seen[e.Content] = true
			p := plain{value: e.Content, mode: mode}
			if mode == Obfuscate {
				p.out = o.mint(e.Content)
				o.legacy["<<$env:S"+strconv.Itoa(envIndex)+">>"] = e.Content
				envIndex++
			} else {
				p.out = o.replacement(e.Content, e.Replacement)
			}
			o.plains = append(o.plains, p)
		case "regex":
			re, err := compile(e.Content, e.Flags)
			if err != nil {
				warns = append(warns, fmt.Sprintf("secret entry %d skipped: regex %s: %v", i+1, e.Content, err))
				continue
			}
			o.patterns = append(o.patterns, pattern{re: re, mode: mode, replacement: e.Replacement})
		}
	}
	if len(key) > 0 && (len(o.plains) > 0 || len(o.patterns) > 0) {
		// The key itself is always redacted (replace mode), in the forms a
		// tool could show it.
		for _, v := range []string{string(key), hex.EncodeToString(key),
			base64.StdEncoding.EncodeToString(key), base64.RawURLEncoding.EncodeToString(key)} {
			if utf8.ValidString(v) && !seen[v] {
				seen[v] = true
				o.plains = append(o.plains, plain{value: v, mode: Replace, out: o.replacement(v, "")})
			}
		}
	}
	slices.SortStableFunc(o.plains, func(a, b plain) int { return len(b.value) - len(a.value) })
	return o, warns, nil
}

// compile maps a secrets.yml regex to RE2: a /pattern/flags literal
// is accepted (escaped \/ handled), the flags i, m and s become inline
// flags, and g, u and y are ignored.
func compile(content, flags string) (*regexp.Regexp, error) {
	pat := content
	if len(pat) >= 2 && pat[0] == '/' {
		if end := strings.LastIndexByte(pat, '/'); end > 0 {
			flags += pat[end+1:]
			pat = strings.ReplaceAll(pat[1:end], `\/`, `/`)
		}
	}
	var inline strings.Builder
	for _, f := range flags {
		switch f {
		case 'i', 'm', 's':
			if !strings.ContainsRune(inline.String(), f) {
				inline.WriteRune(f)
			}
		case 'g', 'u', 'y':
		default:
			return nil, fmt.Errorf("unknown flag %q", f)
		}
	}
	if inline.Len() > 0 {
		pat = "(?" + inline.String() + ")" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	return re, nil
}

// HasSecrets reports whether anything is obfuscated.
func (o *Obfuscator) HasSecrets() bool {
	return o != nil && (len(o.plains) > 0 || len(o.patterns) > 0)
}

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// mint returns the placeholder of value, minting it on first use.
// The caller holds o.mu (or owns o, during New).
func (o *Obfuscator) mint(value string) string {
	if code, ok := o.byVal[value]; ok {
		return code
	}
	for n := 0; ; n++ {
		mac := hmac.New(sha256.New, o.key)
		mac.Write([]byte(value))
		if n > 0 {
			mac.Write([]byte{0})
			mac.Write([]byte(strconv.Itoa(n)))
		}
		code := "#" + b32.EncodeToString(mac.Sum(nil))[:4] + "#"
		if _, taken := o.byCode[code]; taken || o.literals[code] {
			continue
		}
		o.byCode[code] = value
		o.byVal[value] = code
		return code
	}
}

// replacement returns the one-way stand-in of value: custom when
// given, else each character mapped to a keyed pseudo-random character of
// its class (digit, lower, upper; others unchanged), regenerated if it
// equals the input. The caller holds o.mu (or owns o).
func (o *Obfuscator) replacement(value, custom string) string {
	if custom != "" {
		return custom
	}
	if r, ok := o.repl[value]; ok {
		return r
	}
	for n := 0; n < 8; n++ {
		mac := hmac.New(sha256.New, o.key)
		mac.Write([]byte("replace\x00"))
		mac.Write([]byte(value))
		mac.Write([]byte{0, byte(n)})
		stream := mac.Sum(nil)
		out := []byte(value)
		for i, c := range out {
			b := stream[i%len(stream)] ^ byte(i/len(stream))
			switch {
			case c >= '0' && c <= '9':
				out[i] = '0' + b%10
			case c >= 'a' && c <= 'z':
				out[i] = 'a' + b%26
			case c >= 'A' && c <= 'Z':
				out[i] = 'A' + b%26
			}
		}
		if s := string(out); s != value {
			o.repl[value] = s
			return s
		}
	}
	// A value without letters or digits has no same-class stand-in.
	r := strings.Repeat("*", utf8.RuneCountInString(value))
	o.repl[value] = r
	return r
}

// protectedRE finds placeholders already in text: they are never redacted
// again.
var protectedRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`#[A-Z2-7]{4}#|<<\$env:S[0-9]+>>`) })

// match is one secret occurrence in a text: its byte range, whether it is
// reversible (obfuscate mode) and its one-way stand-in otherwise.
type match struct {
	start, end int
	obfuscate  bool
	repl       string // replace mode: the stand-in ("" = derive from the text)
}

// known reports whether code is a placeholder this obfuscator can restore
// (minted, or a legacy <<$env:SN>> of a configured secret).
func (o *Obfuscator) known(code string) bool {
	_, minted := o.byCode[code]
	_, legacy := o.legacy[code]
	return minted || legacy
}

// Obfuscate rewrites every secret in text. Every occurrence of every plain
// secret and every regex match is found; overlapping ones are joined, so
// no part of a secret stays in clear, and a joined run becomes one
// placeholder (reversible when any part is obfuscate-mode) or one
// same-shape stand-in. A placeholder already in the text that this
// obfuscator knows is kept as it is (and counts as sent to the model);
// a secret that overlaps one still wins.
func (o *Obfuscator) Obfuscate(text string) string {
	if !o.HasSecrets() || text == "" {
		return text
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var ms []match
	for _, p := range o.plains {
		for off := 0; off < len(text); {
			i := strings.Index(text[off:], p.value)
			if i < 0 {
				break
			}
			s := off + i
			m := match{start: s, end: s + len(p.value), obfuscate: p.mode == Obfuscate}
			if !m.obfuscate {
				m.repl = p.out
			}
			ms = append(ms, m)
			off = s + 1
		}
	}
	for _, pt := range o.patterns {
		for _, loc := range pt.re.FindAllStringIndex(text, -1) {
			if loc[0] < loc[1] {
				ms = append(ms, match{start: loc[0], end: loc[1], obfuscate: pt.mode == Obfuscate, repl: pt.replacement})
			}
		}
	}
	// Known placeholders in the text were shown to the model before.
	var kept [][]int
	for _, loc := range protectedRE().FindAllStringIndex(text, -1) {
		if code := text[loc[0]:loc[1]]; o.known(code) {
			o.sent[code] = true
			kept = append(kept, loc)
		}
	}
	// Never redact inside a kept placeholder: a match wholly within one is
	// dropped (one that overlaps it partially is a secret and wins).
	ms = slices.DeleteFunc(ms, func(m match) bool {
		for _, k := range kept {
			if k[0] <= m.start && m.end <= k[1] {
				return true
			}
		}
		return false
	})
	if len(ms) == 0 {
		return text
	}
	slices.SortFunc(ms, func(a, b match) int { return a.start - b.start })
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for i := 0; i < len(ms); {
		run := ms[i]
		single := true
		for i++; i < len(ms) && ms[i].start < run.end; i++ {
			run.end = max(run.end, ms[i].end)
			run.obfuscate = run.obfuscate || ms[i].obfuscate
			single = false
		}
		v := text[run.start:run.end]
		var out string
		switch {
		case run.obfuscate:
			out = o.mint(v)
			o.sent[out] = true
		case single && run.repl != "":
			out = run.repl
		default:
			out = o.replacement(v, "")
		}
		b.WriteString(text[last:run.start])
		b.WriteString(out)
		last = run.end
	}
	b.WriteString(text[last:])
	return b.String()
}

// Observe records the known placeholders in text as sent to the model,
// without rewriting anything (obfuscation off: earlier placeholders in the
// history stay restorable).
func (o *Obfuscator) Observe(text string) {
	if o == nil || !strings.ContainsAny(text, "#<") {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, code := range protectedRE().FindAllString(text, -1) {
		if o.known(code) {
			o.sent[code] = true
		}
	}
}

// Restore replaces the placeholders that were sent to the model (minted
// by Obfuscate, or seen in outbound text; the legacy <<$env:SN>> form
// included) with their values. A code the model was never shown, or text
// that merely looks like a placeholder, is left alone: a model cannot
// guess its way to a secret.
func (o *Obfuscator) Restore(text string) string {
	if o == nil || len(text) < 6 || (!strings.Contains(text, "#") && !strings.Contains(text, "<<$env:")) {
		return text
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.sent) == 0 {
		return text
	}
	return protectedRE().ReplaceAllStringFunc(text, func(m string) string {
		if !o.sent[m] {
			return m
		}
		if v, ok := o.byCode[m]; ok {
			return v
		}
		if v, ok := o.legacy[m]; ok {
			return v
		}
		return m
	})
}
