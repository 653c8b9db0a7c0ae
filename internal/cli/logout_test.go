package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// seedLogout stores anthropic (two accounts), openai and groq locally; the
// picker order is first-seen by row id.
func seedLogout(c *cli) {
	c.seed(
		oauthCred("anthropic", "a@x.io", "rt-a"),
		apiKeyCred("openai", "sk-open"),
		oauthCred("anthropic", "b@x.io", "rt-b"),
		apiKeyCred("groq", "gsk-groq"),
	)
}

const pickerText = "Select a provider to logout:\n\n  1. anthropic\n  2. openai\n  3. groq\n\nEnter number (1-3): "

func TestLogoutProviderSoftDeletesEveryRow(t *testing.T) {
	c := newCLI(t)
	seedLogout(c)
	r := c.run("", "auth-broker", "logout", "anthropic")
	if r.code != 0 || r.stdout != "Logged out of anthropic\n" || r.stderr != "" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	want := []string{
		"anthropic oauth=a@x.io [logged out by user]",
		"anthropic oauth=b@x.io [logged out by user]",
		"groq key=gsk-groq []",
		"openai key=sk-open []",
	}
	if got := c.localState(); !slices.Equal(got, want) {
		t.Fatalf("local vault\ngot  %q\nwant %q", got, want)
	}
	assertNoSecrets(t, r, "rt-a", "rt-b", "acc-rt-a")
}

func TestLogoutProviderFlagAndUnknownProvider(t *testing.T) {
	c := newCLI(t)
	seedLogout(c)
	if out := c.ok("", "auth-broker", "logout", "--provider", "groq"); out != "Logged out of groq\n" {
		t.Fatalf("--provider: %q", out)
	}
	// A provider without rows still reports success.
	if out := c.ok("", "auth-broker", "logout", "nobody"); out != "Logged out of nobody\n" {
		t.Fatalf("unknown provider: %q", out)
	}
	want := []string{
		"anthropic oauth=a@x.io []",
		"anthropic oauth=b@x.io []",
		"groq key=gsk-groq [logged out by user]",
		"openai key=sk-open []",
	}
	if got := c.localState(); !slices.Equal(got, want) {
		t.Fatalf("local vault\ngot  %q\nwant %q", got, want)
	}
}

func TestLogoutPicker(t *testing.T) {
	tests := []struct {
		name      string
		stdin     string
		wantCode  int
		wantOut   string
		wantErr   string
		loggedOut string // provider whose rows are disabled afterwards, "" for none
	}{
		{"number picks the provider", "2\n", 0, pickerText + "Logged out of openai\n", "", "openai"},
		{"answer is trimmed", "  3 \r\n", 0, pickerText + "Logged out of groq\n", "", "groq"},
		{"answer without newline", "1", 0, pickerText + "Logged out of anthropic\n", "", "anthropic"},
		{"out of range", "4\n", 1, pickerText, "error: Invalid selection: 4\n", ""},
		{"zero", "0\n", 1, pickerText, "error: Invalid selection: 0\n", ""},
		{"not a number", "openai\n", 1, pickerText, "error: Invalid selection: openai\n", ""},
		{"empty line", "\n", 1, pickerText, "error: Invalid selection: \n", ""},
		{"end of input", "", 1, pickerText, "error: Login cancelled\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCLI(t)
			seedLogout(c)
			r := c.run(tt.stdin, "auth-broker", "logout")
			if r.code != tt.wantCode || r.stdout != tt.wantOut || r.stderr != tt.wantErr {
				t.Fatalf("exit %d\nstdout %q\nstderr %q\nwant exit %d\nstdout %q\nstderr %q",
					r.code, r.stdout, r.stderr, tt.wantCode, tt.wantOut, tt.wantErr)
			}
			for _, row := range c.localState() {
				disabled := strings.HasSuffix(row, "[logged out by user]")
				if disabled != (tt.loggedOut != "" && strings.HasPrefix(row, tt.loggedOut+" ")) {
					t.Errorf("row %q: disabled=%v, want only %q logged out", row, disabled, tt.loggedOut)
				}
			}
		})
	}
}

func TestLogoutPickerEmptyStore(t *testing.T) {
	c := newCLI(t)
	c.seed(apiKeyCred("openai", "sk-gone"))
	c.ok("", "auth-broker", "logout", "openai")
	// Only disabled rows remain: the store counts as empty.
	r := c.run("1\n", "auth-broker", "logout")
	if r.code != 0 || r.stdout != "No credentials stored.\n" || r.stderr != "" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	fresh := newCLI(t)
	if out := fresh.ok("", "auth-broker", "logout"); out != "No credentials stored.\n" {
		t.Fatalf("no vault at all: %q", out)
	}
}

// TestLogoutLeavesReferenceDB: logout works on the Go vault and never
// writes the reference's plain agent.db beside it.
func TestLogoutLeavesReferenceDB(t *testing.T) {
	c := newCLI(t)
	writeRefDB(t, c.agentDB(), `INSERT INTO auth_credentials (provider, credential_type, data) VALUES ('openai', 'api_key', '{"key":"sk-plain-ref"}')`)
	before := fileBytes(t, c.agentDB())
	c.seed(apiKeyCred("openai", "sk-ours"))
	r := c.run("", "auth-broker", "logout", "openai")
	if r.code != 0 || r.stdout != "Logged out of openai\n" || r.stderr != "" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if got, want := c.localState(), []string{"openai key=sk-ours [logged out by user]"}; !slices.Equal(got, want) {
		t.Fatalf("local vault\ngot  %q\nwant %q", got, want)
	}
	if !bytes.Equal(before, fileBytes(t, c.agentDB())) {
		t.Fatal("logout changed the reference agent.db")
	}
	assertNoSecrets(t, r, "sk-plain-ref", "sk-ours")
}
