package provider

import (
	"cmp"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// The Claude Code version a Claude OAuth request presents. Anthropic
// rejects versions below a moving minimum; the rejection names the
// minimum, and the process then presents that version from then on.
const (
	// DefaultClaudeCodeVersion is the Claude Code version presented when
	// neither the environment nor a rejection chose another.
	DefaultClaudeCodeVersion = "2.1.280"
	// ClaudeCodeVersionEnv names the environment variable that pins the
	// version; while it is set, rejections do not move it.
	ClaudeCodeVersionEnv = "PI_AI_CLAUDE_CODE_VERSION"
	// ClaudeCodeVersionTooOld is the Anthropic error type of a request whose
	// Claude Code version is below the minimum. Its message reads
	// "version X or newer is required".
	ClaudeCodeVersionTooOld = "claude_code_version_too_old"
)

// claudeCode holds the version adopted from a rejection, for the rest of
// the process.
var claudeCode struct {
	mu      sync.Mutex
	adopted string // "" until a rejection named a newer version
}

// ClaudeCodeVersion returns the Claude Code version to present: the
// environment's PI_AI_CLAUDE_CODE_VERSION, else the version adopted from a
// rejection, else DefaultClaudeCodeVersion.
func ClaudeCodeVersion() string {
	if v := os.Getenv(ClaudeCodeVersionEnv); v != "" {
		return v
	}
	claudeCode.mu.Lock()
	defer claudeCode.mu.Unlock()
	if claudeCode.adopted != "" {
		return claudeCode.adopted
	}
	return DefaultClaudeCodeVersion
}

// defaultClaudeCodeUserAgent is the User-Agent of the default version,
// built once: it is the one nearly every request sends.
const defaultClaudeCodeUserAgent = "claude-cli/" + DefaultClaudeCodeVersion + " (external, cli)"

// ClaudeCodeUserAgentFor returns the Claude Code CLI User-Agent of version.
func ClaudeCodeUserAgentFor(version string) string {
	if version == DefaultClaudeCodeVersion {
		return defaultClaudeCodeUserAgent
	}
	return "claude-cli/" + version + " (external, cli)"
}

// ClaudeCodeUserAgent returns the User-Agent sent with Claude OAuth tokens
// on messages and usage requests: "claude-cli/<ClaudeCodeVersion()>
// (external, cli)".
func ClaudeCodeUserAgent() string { return ClaudeCodeUserAgentFor(ClaudeCodeVersion()) }

// minVersionPattern finds the minimum in a version rejection's message.
var minVersionPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)version (\d+\.\d+\.\d+) or newer is required`)
})

// AdoptClaudeCodeVersion handles a rejection of a request that presented
// version sent, whose message is message. When the message names a
// minimum newer than sent, that minimum becomes the process's version
// (unless a newer one was adopted meanwhile) and AdoptClaudeCodeVersion
// reports true: the request is worth sending once more. It reports false
// while PI_AI_CLAUDE_CODE_VERSION is set, when the message names no
// version, or when the minimum is not newer than sent.
//
// The minimum is compared with the version the request carried, not the
// current one, so that requests rejected together all retry after the
// first of them adopted the minimum.
func AdoptClaudeCodeVersion(sent, message string) bool {
	if os.Getenv(ClaudeCodeVersionEnv) != "" {
		return false
	}
	m := minVersionPattern().FindStringSubmatch(message)
	if m == nil || compareVersions(m[1], sent) <= 0 {
		return false
	}
	claudeCode.mu.Lock()
	defer claudeCode.mu.Unlock()
	if compareVersions(m[1], cmp.Or(claudeCode.adopted, DefaultClaudeCodeVersion)) > 0 {
		claudeCode.adopted = m[1]
	}
	return true
}

// compareVersions compares two "major.minor.patch" versions numerically:
// negative when a is older than b, positive when newer, 0 when equal or
// when either is not of that form.
func compareVersions(a, b string) int {
	pa, oka := parseVersion(a)
	pb, okb := parseVersion(b)
	if !oka || !okb {
		return 0
	}
	for i := range pa {
		if pa[i] != pb[i] {
			if pa[i] < pb[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func parseVersion(s string) ([3]int, bool) {
	var v [3]int
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || p[0] == '+' {
			return v, false
		}
		v[i] = n
	}
	return v, true
}
