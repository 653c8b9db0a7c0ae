package provider

import "testing"

// resetClaudeCodeVersion forgets an adopted version.
func resetClaudeCodeVersion() {
	claudeCode.mu.Lock()
	claudeCode.adopted = ""
	claudeCode.mu.Unlock()
}

func TestClaudeCodeVersion(t *testing.T) {
	t.Cleanup(resetClaudeCodeVersion)
	resetClaudeCodeVersion()
	if got := ClaudeCodeUserAgent(); got != "claude-cli/2.1.280 (external, cli)" {
		t.Fatalf("default user agent = %q", got)
	}
	msg := `{"type":"error","error":{"type":"claude_code_version_too_old","message":"Claude Code version 2.1.300 or newer is required"}}`
	if AdoptClaudeCodeVersion("2.1.300", msg) || AdoptClaudeCodeVersion("2.1.301", msg) {
		t.Fatal("adopted a minimum that is not newer than the version sent")
	}
	if AdoptClaudeCodeVersion("2.1.280", "version 2.1.300 is required") || AdoptClaudeCodeVersion("2.1.280", "version 2.1 or newer is required") {
		t.Fatal("adopted without a full minimum")
	}
	if !AdoptClaudeCodeVersion("2.1.280", msg) || ClaudeCodeVersion() != "2.1.300" {
		t.Fatalf("version after the rejection = %s, want 2.1.300", ClaudeCodeVersion())
	}
	// A request that left with the old version before the adoption still
	// retries, and an older minimum never moves the version back.
	if !AdoptClaudeCodeVersion("2.1.280", "VERSION 2.1.290 OR NEWER IS REQUIRED") || ClaudeCodeVersion() != "2.1.300" {
		t.Fatalf("version = %s, want 2.1.300 kept", ClaudeCodeVersion())
	}
	if !AdoptClaudeCodeVersion("2.1.300", "version 2.2.0 or newer is required") || ClaudeCodeUserAgent() != "claude-cli/2.2.0 (external, cli)" {
		t.Fatalf("user agent = %s, want 2.2.0", ClaudeCodeUserAgent())
	}

	t.Setenv(ClaudeCodeVersionEnv, "2.1.999")
	if ClaudeCodeVersion() != "2.1.999" || AdoptClaudeCodeVersion("2.1.999", "version 2.3.0 or newer is required") {
		t.Fatal("the environment's version must win and stay")
	}
}

func TestCompareVersions(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"2.1.280", "2.1.280", 0}, {"2.1.281", "2.1.280", 1}, {"2.1.99", "2.1.280", -1},
		{"10.0.0", "9.9.9", 1}, {"2.1", "2.1.0", 0}, {"2.1.x", "2.1.0", 0}, {"2.1.+1", "2.1.0", 0},
	} {
		if got := compareVersions(tt.a, tt.b); got != tt.want {
			t.Errorf("compareVersions(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
