package config

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
)

var envNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// ValidEnvName reports whether name is a POSIX shell identifier
// ([A-Za-z_][A-Za-z0-9_]*), the only names accepted from .env files.
func ValidEnvName(name string) bool { return envNameRE().MatchString(name) }

var exportRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^export[ \t]+(.*)$`) })

// ParseDotenv parses the content of a .env file with the reference's
// Bun-compatible line rules: blank lines and full-line # comments are
// ignored; an optional "export " prefix is dropped; keys must be shell
// identifiers; a value quoted with ', " or ` ends at the next unescaped
// matching quote (no escape processing, an unterminated quote runs to the
// end of the line); an unquoted value ends before the first whitespace+#
// and is right-trimmed. Values containing NUL are dropped. A later line
// wins over an earlier one for the same key.
//
// Mirroring OMP_* keys to PI_* is done by LoadEnv, not here.
func ParseDotenv(data []byte) map[string]string {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := parseDotenvLine(line)
		if ok && !strings.ContainsRune(v, 0) {
			out[k] = v
		}
	}
	return out
}

func parseDotenvLine(line string) (key, value string, ok bool) {
	trimmed := strings.TrimSpace(line)
	if trimmed == "" || strings.HasPrefix(trimmed, "#") {
		return "", "", false
	}
	eq := strings.IndexByte(trimmed, '=')
	if eq < 0 {
		return "", "", false
	}
	key = strings.TrimSpace(trimmed[:eq])
	if m := exportRE().FindStringSubmatch(key); m != nil {
		key = strings.TrimSpace(m[1])
	}
	if !ValidEnvName(key) {
		return "", "", false
	}
	raw := strings.TrimLeft(trimmed[eq+1:], " \t")
	if raw != "" && (raw[0] == '"' || raw[0] == '\'' || raw[0] == '`') {
		q := raw[0]
		end := -1
		for i := 1; i < len(raw); i++ {
			if raw[i] == q && raw[i-1] != '\\' {
				end = i
				break
			}
		}
		if end < 0 {
			return key, raw[1:], true
		}
		return key, raw[1:end], true
	}
	if i := commentStart(raw); i >= 0 {
		raw = raw[:i]
	}
	return key, strings.TrimRight(raw, " \t\r\n\v\f"), true
}

// commentStart returns the index of the first " #" or "\t#" in s, or -1.
func commentStart(s string) int {
	for i := 0; i+1 < len(s); i++ {
		if (s[i] == ' ' || s[i] == '\t') && s[i+1] == '#' {
			return i
		}
	}
	return -1
}
