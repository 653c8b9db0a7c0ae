package cli

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestStatusNotConfigured(t *testing.T) {
	c := newCLI(t)
	if out := c.ok("", "auth-broker", "status"); out != "No auth-broker configured (set OMP_AUTH_BROKER_URL to enable).\n" {
		t.Fatalf("text: %q", out)
	}
	if out := c.ok("", "auth-broker", "status", "--json"); out != `{"ok":false,"reason":"not_configured"}`+"\n" {
		t.Fatalf("json: %q", out)
	}
}

func TestStatusOKAgainstRunningBroker(t *testing.T) {
	b := startBroker(t, "")
	c := newCLI(t)
	c.useBroker(b)
	const accepted = "token from env OMP_AUTH_BROKER_TOKEN: accepted\n"
	if out := c.ok("", "auth-broker", "status"); out != "OK "+b.url+" (version=cli-test)\n"+accepted {
		t.Fatalf("text: %q", out)
	}
	if out := c.ok("", "auth-broker", "status", "--json"); out != `{"url":"`+b.url+`","ok":true,"version":"cli-test","tokenSource":"env OMP_AUTH_BROKER_TOKEN"}`+"\n" {
		t.Fatalf("json: %q", out)
	}
	// The URL is shown as resolved; the HTTP client trims the slash.
	c.env["OMP_AUTH_BROKER_URL"] = b.url + "/"
	if out := c.ok("", "auth-broker", "status"); out != "OK "+b.url+"/ (version=cli-test)\n"+accepted {
		t.Fatalf("trailing slash: %q", out)
	}
}

func TestStatusFailsAgainstClosedPort(t *testing.T) {
	c := newCLI(t)
	url := "http://" + closedAddr(t)
	c.env["OMP_AUTH_BROKER_URL"], c.env["OMP_AUTH_BROKER_TOKEN"] = url, "tok-never-shown-123"
	// The client's message, then the reason, the URL and the fix.
	msg := "Auth broker request failed after 2 attempt(s): connection refused (" + url + "); " +
		"start it (omp auth-broker serve) or check OMP_AUTH_BROKER_URL"

	r := c.run("", "auth-broker", "status")
	if r.code != 1 || r.stdout != "FAILED "+url+": "+msg+"\n" || r.stderr != "" {
		t.Fatalf("text: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = c.run("", "auth-broker", "status", "--json")
	if r.code != 1 || r.stdout != `{"ok":false,"url":"`+url+`","error":"`+msg+`","tokenSource":"env OMP_AUTH_BROKER_TOKEN"}`+"\n" || r.stderr != "" {
		t.Fatalf("json: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	assertNoSecrets(t, r, "tok-never-shown-123")
}

func TestStatusURLWithoutTokenIsAnError(t *testing.T) {
	c := newCLI(t)
	url := "http://" + closedAddr(t) // never contacted: the error comes first
	c.env["OMP_AUTH_BROKER_URL"] = url
	r := c.run("", "auth-broker", "status")
	want := "error: OMP_AUTH_BROKER_URL is set (" + url + ") but no bearer token is available. " +
		"Set OMP_AUTH_BROKER_TOKEN, the `auth.broker.token` config entry, or place one at " + c.tokenPath() + ".\n"
	if r.code != 1 || r.stdout != "" || r.stderr != want {
		t.Fatalf("exit %d\nstdout %q\nstderr %q\nwant   %q", r.code, r.stdout, r.stderr, want)
	}
}

// TestBrokerConfigSources resolves the broker URL and token from every
// documented source: flag, environment, config.yml and the token file. `status` proves the URL and
// the token and names the token's source; `migrate --from-local --dry-run` proves the token too,
// because it fetches the authenticated snapshot and fails with
// `Auth broker returned no snapshot` on a wrong token.
func TestBrokerConfigSources(t *testing.T) {
	b := startBroker(t, "")
	wrong := "wrong-token-0000"
	tests := []struct {
		name   string
		env    map[string]string
		config string // with {url} and {token} placeholders
		file   string // token file content
		tokOK  bool   // the token that wins is the broker's
	}{
		{name: "env url and env token", env: map[string]string{"OMP_AUTH_BROKER_URL": "{url}", "OMP_AUTH_BROKER_TOKEN": "{token}"}, tokOK: true},
		{name: "env token wins over config token", env: map[string]string{"OMP_AUTH_BROKER_URL": "{url}", "OMP_AUTH_BROKER_TOKEN": "{token}"},
			config: "auth:\n  broker:\n    token: " + wrong + "\n", tokOK: true},
		{name: "env url wins over config url", env: map[string]string{"OMP_AUTH_BROKER_URL": "{url}", "OMP_AUTH_BROKER_TOKEN": "{token}"},
			config: "auth:\n  broker:\n    url: http://127.0.0.1:1\n", tokOK: true},
		{name: "flat config keys", config: "\"auth.broker.url\": \"{url}\"\n\"auth.broker.token\": \"{token}\"\n", tokOK: true},
		{name: "nested config keys", config: "auth:\n  broker:\n    url: \"{url}\"\n    token: \"{token}\"\n", tokOK: true},
		{name: "nested wins over flat", config: "\"auth.broker.url\": http://127.0.0.1:1\n\"auth.broker.token\": " + wrong +
			"\nauth:\n  broker:\n    url: \"{url}\"\n    token: \"{token}\"\n", tokOK: true},
		{name: "config token used with env url", env: map[string]string{"OMP_AUTH_BROKER_URL": "{url}"},
			config: "auth:\n  broker:\n    token: \"{token}\"\n", tokOK: true},
		{name: "config values naming env vars", env: map[string]string{"MY_BROKER_URL": "{url}", "MY_BROKER_TOKEN": "{token}"},
			config: "auth:\n  broker:\n    url: MY_BROKER_URL\n    token: MY_BROKER_TOKEN\n", tokOK: true},
		{name: "config values as $NAME", env: map[string]string{"MY_BROKER_URL": "{url}", "MY_BROKER_TOKEN": "{token}"},
			config: "auth:\n  broker:\n    url: $MY_BROKER_URL\n    token: ${MY_BROKER_TOKEN}\n", tokOK: true},
		{name: "config !command values", config: "auth:\n  broker:\n    url: \"!printf '%s\\\\n' {url}\"\n    token: \"!echo {token}\"\n", tokOK: true},
		{name: "token file fallback", env: map[string]string{"OMP_AUTH_BROKER_URL": "{url}"}, file: "{token}\n", tokOK: true},
		{name: "failed !command token falls through to the file", env: map[string]string{"OMP_AUTH_BROKER_URL": "{url}"},
			config: "auth:\n  broker:\n    token: \"!exit 3\"\n", file: "{token}", tokOK: true},
		{name: "wrong token is rejected by the broker", env: map[string]string{"OMP_AUTH_BROKER_URL": "{url}", "OMP_AUTH_BROKER_TOKEN": wrong}},
	}
	fill := func(s string) string {
		return strings.NewReplacer("{url}", b.url, "{token}", b.token).Replace(s)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCLI(t)
			for k, v := range tt.env {
				c.env[k] = fill(v)
			}
			if tt.config != "" {
				c.writeConfig(fill(tt.config))
			}
			if tt.file != "" {
				writeFile(t, c.tokenPath(), fill(tt.file))
			}
			// status names the token's source, and fails on a rejected token.
			source := "config.yml auth.broker.token (" + filepath.Join(c.agentDir(), "config.yml") + ")"
			if tt.file != "" {
				source = c.tokenPath()
			} else if _, ok := tt.env["OMP_AUTH_BROKER_TOKEN"]; ok {
				source = "env OMP_AUTH_BROKER_TOKEN"
			}
			r := c.run("", "auth-broker", "status")
			if tt.tokOK {
				if want := "OK " + b.url + " (version=cli-test)\ntoken from " + source + ": accepted\n"; r.code != 0 || r.stdout != want || r.stderr != "" {
					t.Fatalf("status: exit %d stdout %q stderr %q\nwant %q", r.code, r.stdout, r.stderr, want)
				}
			} else if want := "FAILED " + b.url + ": auth-broker at " + b.url + " rejected the token from " + source +
				" (401): check OMP_AUTH_BROKER_TOKEN, or unset it to use the token in " + c.tokenPath() + "\n"; r.code != 1 || r.stdout != want || r.stderr != "" {
				t.Fatalf("status with a wrong token: exit %d stdout %q stderr %q\nwant %q", r.code, r.stdout, r.stderr, want)
			}
			assertNoSecrets(t, r, b.token, wrong)
			r = c.run("", "auth-broker", "migrate", "--from-local", "--dry-run")
			if tt.tokOK {
				if r.code != 0 || r.stdout != "Nothing to migrate.\n" || r.stderr != "" {
					t.Fatalf("migrate with the right token: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
				}
			} else if r.code != 1 || r.stderr != "error: Auth broker returned no snapshot\n" {
				t.Fatalf("migrate with a wrong token: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			assertNoSecrets(t, r, b.token, wrong)
		})
	}
}

func TestUnresolvedCommandURLLeavesBrokerOff(t *testing.T) {
	c := newCLI(t)
	c.writeConfig("auth:\n  broker:\n    url: \"!exit 1\"\n    token: tok\n")
	if out := c.ok("", "auth-broker", "status"); out != "No auth-broker configured (set OMP_AUTH_BROKER_URL to enable).\n" {
		t.Fatalf("status: %q", out)
	}
}

// TestInvalidConfigIsAnError: every command that reads config.yml refuses
// an invalid one with one line naming the file, before doing anything else.
func TestInvalidConfigIsAnError(t *testing.T) {
	c := newCLI(t)
	c.writeConfig("auth: [unclosed\n")
	want := "error: " + filepath.Join(c.agentDir(), "config.yml") + " contains invalid YAML: yaml: "
	for _, args := range [][]string{
		{"auth-broker", "status"},
		{"auth-broker", "list"},
		{"auth-broker", "login", "deepseek"},
		{"auth-broker", "serve", "--bind", "127.0.0.1:0"},
		{"auth-gateway", "serve", "--bind", "127.0.0.1:0"},
		{"usage"},
		{"-p", "hello"},
	} {
		r := c.run("", args...)
		if r.code != 1 || !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
			t.Errorf("%v: exit %d stdout %q stderr %q, want %q…", args, r.code, r.stdout, r.stderr, want)
		}
	}
	// An env broker does not make the file's state irrelevant.
	c.env["OMP_AUTH_BROKER_URL"], c.env["OMP_AUTH_BROKER_TOKEN"] = "http://127.0.0.1:1", "tok"
	if r := c.run("", "auth-broker", "status"); r.code != 1 || !strings.HasPrefix(r.stderr, want) {
		t.Errorf("status with an env broker: exit %d stderr %q", r.code, r.stderr)
	}
}

// TestAgentDirOverride: PI_CODING_AGENT_DIR moves config.yml and agent.db
// but never the token file.
func TestAgentDirOverride(t *testing.T) {
	c := newCLI(t)
	b := startBroker(t, c.tokenPath())
	c.env["PI_CODING_AGENT_DIR"] = filepath.Join(t.TempDir(), "agent-elsewhere")
	c.writeConfig("auth:\n  broker:\n    url: " + b.url + "\n")
	c.seed(apiKeyCred("openai", "sk-elsewhere"))
	if !strings.HasPrefix(c.agentDB(), c.env["PI_CODING_AGENT_DIR"]) {
		t.Fatalf("agent.db %s not under the override", c.agentDB())
	}
	out := c.ok("", "auth-broker", "migrate", "--from-local")
	if out != "uploaded [local-sqlite] openai (api key)\n" {
		t.Fatalf("migrate: %q", out)
	}
	if got := b.state(t); !slices.Equal(got, []string{"openai key=sk-elsewhere"}) {
		t.Fatalf("broker: %q", got)
	}
}

// TestStatusRejectedTokenFromFile: a token file the broker does not accept
// fails status with exit 1, naming the file to fix.
func TestStatusRejectedTokenFromFile(t *testing.T) {
	b := startBroker(t, "")
	c := newCLI(t)
	c.env["OMP_AUTH_BROKER_URL"] = b.url
	writeFile(t, c.tokenPath(), "stale-token-0000\n")
	r := c.run("", "auth-broker", "status")
	want := "FAILED " + b.url + ": auth-broker at " + b.url + " rejected the token from " + c.tokenPath() +
		" (401): check the token in " + c.tokenPath() + " or OMP_AUTH_BROKER_TOKEN\n"
	if r.code != 1 || r.stdout != want || r.stderr != "" {
		t.Fatalf("exit %d\nstdout %q\nstderr %q\nwant   %q", r.code, r.stdout, r.stderr, want)
	}
	assertNoSecrets(t, r, b.token, "stale-token-0000")
}
