package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// usageText is what a command-line mistake prints on stderr (the reference
// CLI's CliUsageError format), always with exit code 1.
func usageText(msg, useLine, path string) string {
	return "error: " + msg + "\n\nUSAGE\n  " + useLine + "\n\nRun `" + path + " --help` for details.\n"
}

func TestUsageErrorsExitOneWithUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"auth-broker", "token", "--bogus"},
			usageText("unknown flag: --bogus", "omp auth-broker token [flags]", "omp auth-broker token")},
		{"unknown flag on the group", []string{"auth-broker", "--nope"},
			usageText("unknown flag: --nope", "omp auth-broker [flags]", "omp auth-broker")},
		{"flag of another action", []string{"auth-broker", "status", "--regenerate"},
			usageText("unknown flag: --regenerate", "omp auth-broker status [flags]", "omp auth-broker status")},
		{"bad flag value", []string{"auth-broker", "token", "--regenerate=maybe"},
			usageText(`invalid argument "maybe" for "--regenerate" flag: strconv.ParseBool: parsing "maybe": invalid syntax`,
				"omp auth-broker token [flags]", "omp auth-broker token")},
		{"missing flag value", []string{"auth-broker", "import", "x", "--provider"},
			usageText("flag needs an argument: --provider", "omp auth-broker import <file|dir> [flags]", "omp auth-broker import")},
		{"unknown action", []string{"auth-broker", "bogus"},
			usageText(`Expected action to be one of: serve, token, login, logout, import, migrate, status, list, rekey, backup, restore; got "bogus"`,
				"omp auth-broker [flags]", "omp auth-broker")},
		{"extra argument", []string{"auth-broker", "status", "extra"},
			usageText(`unknown command "extra" for "omp auth-broker status"`, "omp auth-broker status [flags]", "omp auth-broker status")},
		{"two providers", []string{"auth-broker", "logout", "a", "b"},
			usageText("accepts at most 1 arg(s), received 2", "omp auth-broker logout [<provider>] [flags]", "omp auth-broker logout")},
		{"migrate takes no path", []string{"auth-broker", "migrate", "--from-local", "here"},
			usageText(`unknown command "here" for "omp auth-broker migrate"`, "omp auth-broker migrate --from-local [flags]", "omp auth-broker migrate")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { expectFailure(t, tt.want, tt.args...) })
	}
}

func TestRuntimeErrorsPrintOneLine(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		// `omp [messages...]` is the agent: a bare word is a prompt.
		{"a bare word is a prompt", []string{"nope"}, "error: No models available: run omp login, configure the auth broker (OMP_AUTH_BROKER_URL) or set provider API keys\n"},
		{"bad bind", []string{"auth-broker", "serve", "--bind", "nonsense"}, "error: Invalid bind 'nonsense'; expected 'host:port' or 'port'.\n"},
		{"bad bind port", []string{"auth-broker", "serve", "-b", "127.0.0.1:99999"}, "error: Invalid bind '127.0.0.1:99999'; port out of range.\n"},
		{"bad log level", []string{"auth-broker", "serve", "--log-level", "loud"}, "error: invalid --log-level \"loud\": want debug, info, warn or error\n"},
		{"bad log format", []string{"auth-gateway", "serve", "--log-format", "xml"}, "error: invalid --log-format \"xml\": want text or json\n"},
		{"import usage text", []string{"auth-broker", "import"},
			"error: Usage: omp auth-broker import <file|dir> [--provider=<id>] [--include-disabled] [--dry-run]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { expectFailure(t, tt.want, tt.args...) })
	}
}

func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{}, {"auth-broker"}, {"auth-broker", "--help"}, {"auth-broker", "import", "-h"}, {"--version"}} {
		c := newCLI(t)
		r := c.run("", args...)
		if r.code != 0 || r.stderr != "" || r.stdout == "" {
			t.Fatalf("omp %v: exit %d stdout %q stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	c := newCLI(t)
	if out := c.ok("", "auth-broker"); !strings.Contains(out, "omp auth-broker [command]") || !strings.Contains(out, "migrate") {
		t.Fatalf("auth-broker help: %q", out)
	}
}

func TestMissingHomeIsAnError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"auth-broker", "token"}, strings.NewReader(""), &stdout, &stderr, []string{"PATH=/usr/bin"})
	if code != 1 || stdout.String() != "" || stderr.String() != "error: config: cannot determine the home directory: HOME is not set\n" {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout.String(), stderr.String())
	}
}

// TestRunUsesTheGivenEnvironment drives run() itself (main's entry point)
// with a temporary HOME: the token lands there, not in the real home.
func TestRunUsesTheGivenEnvironment(t *testing.T) {
	home := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"auth-broker", "token", "--json"}, strings.NewReader(""), &stdout, &stderr, []string{"HOME=" + home})
	want := `"path":"` + home + `/.omp/auth-broker.token"}`
	if code != 0 || stderr.String() != "" || !strings.HasSuffix(strings.TrimSpace(stdout.String()), want) {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout.String(), stderr.String())
	}
}

// expectFailure runs the CLI and wants exit code 1, nothing on stdout and
// exactly want on stderr.
func expectFailure(t *testing.T, want string, args ...string) {
	t.Helper()
	r := newCLI(t).run("", args...)
	if r.code != 1 || r.stdout != "" || r.stderr != want {
		t.Fatalf("exit %d stdout %q\nstderr %q\nwant   %q", r.code, r.stdout, r.stderr, want)
	}
}
